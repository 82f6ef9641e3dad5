"""Learning curves of SSL vs supervised training on Fashion-MNIST, from the sweep's runs.

  .venv/bin/python studies/fashion_mnist_100/scripts/fashion_mnist_curves.py runs/fashion_mnist_ssl

ROOT is the --root of
`bin/sweep --table_file=studies/fashion_mnist_100/tables/fashion_mnist_ssl.json`. One panel
per label budget: validation error (%) of every run against critic updates (SSL: 2 per
step; supervised: 1), one thin line per seed and the mean over seeds (thick). Writes
docs/results/fashion_mnist_curves.png and prints, per cell, the runs' best validation step,
test error there and wall time.
"""
import json
import os
import pathlib
import sys

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np

from tf_ipmssl import cells as cells_lib  # pylint: disable=g-import-not-at-top
from tf_ipmssl import table_file  # pylint: disable=g-import-not-at-top
from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top

RESULTS = pathlib.Path(__file__).resolve().parents[3] / 'docs' / 'results'

TABLE_FILE = pathlib.Path(__file__).resolve().parents[1] / 'tables' / 'fashion_mnist_ssl.json'
UPDATES_PER_STEP = {'supervised': 1}  # Every other row: n_c = 2 critic updates per step.


def seed_dirs(root, cell):
  directory = os.path.join(root, cell.id)
  if not os.path.isdir(directory):
    return []
  return sorted(os.path.join(directory, d) for d in os.listdir(directory)
                if d.startswith('seed_'))


def mean_curve(curves):
  """(x, mean over the curves) at the x every curve has ({x: value} each), x ascending."""
  common = sorted(set.intersection(*[set(c) for c in curves]))
  return common, [float(np.mean([c[x] for c in curves])) for x in common]


def main(root):
  study = table_file.load(str(TABLE_FILE))
  labels = dict(study.rows)
  figure, axes = plt.subplots(1, len(study.columns), figsize=(6.5 * len(study.columns), 4.6),
                              squeeze=False)
  for axis, (dataset, column, header) in zip(axes[0], study.columns):
    for index, (row, label) in enumerate(study.rows):
      cell = cells_lib.cell_at(study.name, dataset, row, column)
      color = f'C{index}'
      curves = []
      for run_dir in seed_dirs(root, cell):
        points = event_files.read_scalars(os.path.join(run_dir, 'eval')).get(
            'eval/validation_error', [])
        if not points:
          continue
        scale = UPDATES_PER_STEP.get(row, 2)
        xs, ys = zip(*[(s * scale, v) for s, v in points])
        axis.plot(xs, ys, color=color, alpha=0.3, linewidth=0.8)
        curves.append(dict(zip(xs, ys)))
        metrics_path = os.path.join(run_dir, 'metrics.json')
        if os.path.isfile(metrics_path):
          with open(metrics_path) as f:
            m = json.load(f)
          print(f"{cell.id} {os.path.basename(run_dir)}: best step {m['best']['step']}, "
                f"test {m['best']['test_error']}, finished {m.get('finished')}, "
                f"wall {m.get('wall_seconds_this_session', 0):.0f} s")
      if curves:
        axis.plot(*mean_curve(curves), color=color, linewidth=2.2,
                  label=f'{label} (n={len(curves)})')
    axis.set_title(f'Fashion-MNIST, {header} labels', fontsize=10)
    axis.set_xlabel('critic updates')
    axis.set_ylabel('validation error (%)')
    axis.set_ylim(10, 50)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
  figure.tight_layout()
  out = str(RESULTS / 'fashion_mnist_curves.png')
  figure.savefig(out, dpi=90)
  print(f'wrote {out}')


if __name__ == '__main__':
  main(sys.argv[1])
