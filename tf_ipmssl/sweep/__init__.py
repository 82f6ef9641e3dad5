"""Seed sweeps over the paper's cells (`bin/sweep`): plan, run, tabulate, plot.

- `plan`: cells × seeds → runs, each with its own model directory and bin/train command.
- `runner`: runs them one bin/train subprocess at a time, skipping finished runs and
  resuming interrupted ones.
- `ray_backend`: the same runs as Ray tasks on a cluster (`bin/sweep --backend=ray`; imports
  `ray`, the optional `ray` extra).
- `tables`: collects each run's metrics.json into the paper's table layouts (markdown, CSV).
- `plots`: one PNG per table (matplotlib, the optional `plots` extra).

None of these modules imports TensorFlow: the training happens in the subprocesses.
"""
