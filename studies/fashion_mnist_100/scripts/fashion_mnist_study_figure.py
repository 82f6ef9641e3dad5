"""Draws docs/results/fashion_mnist_study/fashion_mnist_study_figure.png from the Fashion-MNIST study's sweep directory.

  .venv/bin/python studies/fashion_mnist_100/scripts/fashion_mnist_study_figure.py runs/fashion_mnist_study

ROOT is the --root of
`bin/sweep --table_file=studies/fashion_mnist_100/tables/fashion_mnist_study.json`; runs are read from
ROOT/fashion_mnist_study/<cell>/seed_<s> as the sweep's tables read them.

Left: test error at the best validation step per row (mean ± std over seeds, each seed a dot).
Right: validation error vs critic iterations for SSL (K+1, Fisher on f, the quickstart) and
supervised-only, every seed (thin) and their mean (thick).
Also prints, per row, mean ± std, n, the per-seed errors, the mean wall time, the steps
of best validation error and the mean test error at the last step.
"""
import pathlib
import sys

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np

from tf_ipmssl import cells as cells_lib  # pylint: disable=g-import-not-at-top
from tf_ipmssl import table_file  # pylint: disable=g-import-not-at-top
from tf_ipmssl.run_dir import run_files  # pylint: disable=g-import-not-at-top
from tf_ipmssl.sweep import results as results_lib  # pylint: disable=g-import-not-at-top
from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top

RESULTS = pathlib.Path(__file__).resolve().parents[3] / 'docs' / 'results'

TABLE_FILE = pathlib.Path(__file__).resolve().parents[1] / 'tables' / 'fashion_mnist_study.json'
CURVES = (('kplus1_fisher_f', 2, 'SSL: K+1, Fisher(f)'), ('supervised', 1, 'supervised only'))


def validation_curve(run_dir):
  """[(step, validation error %)] from the run's eval TensorBoard events."""
  return sorted(event_files.read_eval_curves(run_dir).get('eval/validation_error', {}).items())


def mean_curve(curves, critic_per_step):
  """(critic updates, mean validation error) over the curves' first evaluations, as many as
  the shortest curve has (each [(step, error)] in step order, the same steps)."""
  length = min(len(c) for c in curves)
  steps = [s * critic_per_step for s, _ in curves[0][:length]]
  return steps, np.mean([[e for _, e in c[:length]] for c in curves], axis=0)


def main(root):
  study = table_file.load(str(TABLE_FILE))
  results = results_lib.collect(root, cells_lib.select_cells(tables=[study.name]))
  labels = dict(study.rows)
  rows = [r for r in results.values() if r.n]
  rows.sort(key=lambda r: r.mean)
  figure, (left, right) = plt.subplots(1, 2, figsize=(14, 5.2),
                                       gridspec_kw={'width_ratios': [1.15, 1]})
  positions = np.arange(len(rows))
  left.barh(positions, [r.mean for r in rows], xerr=[r.std or 0.0 for r in rows],
            color=['#e0a36b' if r.cell.row == 'supervised' else '#8fb3d9' for r in rows],
            capsize=3)
  for position, result in zip(positions, rows):
    left.plot(result.errors, [position] * result.n, 'k.', markersize=6)
  left.set_yticks(positions)
  left.set_yticklabels([f'{labels[r.cell.row]} (n={r.n})' for r in rows], fontsize=8)
  left.invert_yaxis()
  left.set_xlabel('test error (%) at the best validation step')
  left.set_title('Fashion-MNIST, 1000 labels, same budget per run', fontsize=10)
  left.grid(axis='x', alpha=0.3)

  colors = {'kplus1_fisher_f': '#1f77b4', 'supervised': '#d62728'}
  for row, critic_per_step, label in CURVES:
    result = results.get(f'{study.name}/fashion_mnist_{row}')
    curves = [validation_curve(run.model_dir) for run in (result.runs if result else ())]
    curves = [c for c in curves if c]
    for curve in curves:
      right.plot([s * critic_per_step for s, _ in curve], [e for _, e in curve], '-',
                 color=colors[row], alpha=0.3, linewidth=1)
    if curves:
      steps, mean = mean_curve(curves, critic_per_step)
      right.plot(steps, mean, 'o-', color=colors[row], linewidth=2,
                 label=f'{label} (mean of {len(curves)} seeds)')
  right.set_xlabel('critic updates')
  right.set_ylabel('validation error (%)')
  right.set_title('validation error during training', fontsize=10)
  right.grid(alpha=0.3)
  right.legend()
  figure.tight_layout()
  out = str(RESULTS / 'fashion_mnist_study' / 'fashion_mnist_study_figure.png')
  figure.savefig(out, dpi=110)
  print(out)
  for result in rows:
    walls = [run.wall_seconds for run in result.runs if run.wall_seconds]
    wall = f', wall {np.mean(walls):.0f} s' if walls else ''
    seeds = ', '.join(f's{run.seed} {run.test_error:.2f}' for run in result.runs)
    metrics = [run_files.read_metrics(run.model_dir, unreadable_ok=True)
               for run in result.runs]
    best_steps = [m['best']['step'] for m in metrics]
    last = np.mean([m['final']['test_error'] for m in metrics])
    print(f'{result.cell.row}: {result.text} [{seeds}]{wall}; best at steps {best_steps}, '
          f'last-step test error {last:.2f}')


if __name__ == '__main__':
  main(sys.argv[1])
