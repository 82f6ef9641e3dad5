"""Seed sweeps over the paper's cells (`bin/sweep`): plan, run, tabulate, plot.

- `plan`: cells × seeds → runs, each with its own model directory and bin/train command.
- `runner`: runs them one bin/train subprocess at a time, skipping finished runs and
  resuming interrupted ones.
- `ray_backend`: the same runs as Ray tasks on a cluster (`bin/sweep --backend=ray`; imports
  `ray`, the optional `ray` extra).
- `results`: reads each finished run's numbers (its metrics.json, or a runs.csv row) into
  per-cell results: mean ± sample std, n, the CPUs they trained on.
- `tables`: lays them out as the paper's tables (markdown, CSV, per-class errors).
- `plots`: one PNG per table (matplotlib, the optional `plots` extra).

None of these modules imports TensorFlow: the training happens in the subprocesses.
"""
