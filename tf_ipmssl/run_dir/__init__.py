"""A run directory's bookkeeping: its files and their formats, the lock, checkpoint integrity,
the record of what ran where (CPU, versions, wall time), the progress report and the baseline
comparison.

- `run_files`: the directory's file names, their reading and writing;
- `run_lock`: one trainer per directory;
- `checkpoint_integrity`: damaged checkpoints found, set aside and named;
- `run_record`: config.gin, run_config.json, versions.json, dataset.json;
- `config_formats`: run_config.json's formats, their history, and `upgrade` to today's;
- `cpu_info`, `wall_time`: the CPU a run computes on, where a session's wall time goes;
- `reporting`: metrics.json and the final line; `baseline`: what the final line compares with.

The training (tf_ipmssl/training/) writes a run directory through these; the sweep, the
programs and the scripts read it. Nothing here imports the training.
"""
