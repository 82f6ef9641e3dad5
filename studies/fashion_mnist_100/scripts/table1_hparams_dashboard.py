"""Writes the miniature Table 1's runs (runs.csv) as HParams sessions for TensorBoard.

  .venv/bin/python studies/fashion_mnist_100/scripts/table1_hparams_dashboard.py LOGDIR
  .venv/bin/tensorboard --logdir LOGDIR      # the HParams tab: one row per run

A run trained now writes its own MODEL_DIR/hparams/ (tf_ipmssl/training/tensorboard.py). The
runs of this page were trained before that, and only their results table is kept here, so
each run's configuration is rebuilt from its cell's gin file, the preset and its seed, the
way bin/sweep started it, and its metrics are runs.csv's (test error at the best
validation step, steps, wall time; the validation error is not in runs.csv).
"""
import csv
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]

import gin  # pylint: disable=g-import-not-at-top

from tf_ipmssl import configurables  # pylint: disable=g-import-not-at-top
from tf_ipmssl.training import tensorboard  # pylint: disable=g-import-not-at-top

RUNS = ROOT / 'docs' / 'results' / 'table1_fashion_mnist_100' / 'runs.csv'
PRESET = 'gin/presets/cpu_fashion_mnist_100.gin'
SUPERVISED_PRESET = 'gin/presets/cpu_fashion_mnist_100_supervised.gin'


def gin_files(cell):
  preset = SUPERVISED_PRESET if cell.startswith('appendix_c/') else PRESET
  return [f'gin/{cell}.gin', preset]


def main(logdir):
  with open(RUNS) as f:
    rows = list(csv.DictReader(f))
  for row in rows:
    cell, seed = row['cell'], int(row['seed'])
    files = gin_files(cell)
    gin.clear_config()
    configurables.parse([str(ROOT / f) for f in files],
                           [f'train.seed = {seed}', f'build_ssl_data.split_seed = {seed}'])
    config = configurables.run_config().to_json()
    metrics = {'test_error': float(row['test_error']), 'steps': int(row['steps']),
               'wall_seconds': float(row['wall_seconds'])}
    tensorboard.session(os.path.join(logdir, cell, f'seed_{seed}', 'hparams'),
                        tensorboard.hparams_of(config, files), metrics)
  print(f'wrote {len(rows)} runs to {logdir}')


if __name__ == '__main__':
  if len(sys.argv) != 2:
    sys.exit('usage: studies/fashion_mnist_100/scripts/table1_hparams_dashboard.py LOGDIR')
  main(sys.argv[1])
