"""Draws docs/results/fashion_mnist.png from the study's run directories.

  python docs/results/fashion_mnist_figures.py STUDY_ROOT

Left: test error at the best validation step per row (mean over seeds, each seed a dot).
Right: validation error vs critic iterations for SSL (K+1, Fisher on f) and supervised-only.
"""
import collections
import json
import os
import sys

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np
import tensorflow as tf


def validation_curve(run_dir):
  points = []
  eval_dir = os.path.join(run_dir, 'eval')
  for name in sorted(os.listdir(eval_dir)):
    for event in tf.compat.v1.train.summary_iterator(os.path.join(eval_dir, name)):
      for value in event.summary.value:
        if value.tag == 'eval/validation_error':
          points.append((event.step, float(tf.make_ndarray(value.tensor))))
  return sorted(points)


def main(root):
  errors = collections.defaultdict(list)
  for name in sorted(os.listdir(root)):
    path = os.path.join(root, name, 'metrics.json')
    if os.path.isfile(path):
      metrics = json.load(open(path))
      if metrics.get('finished'):
        errors[name.rsplit('_s', 1)[0]].append(metrics['best']['test_error'])
  rows = sorted(errors, key=lambda r: np.mean(errors[r]))
  fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
  left.barh(rows, [np.mean(errors[r]) for r in rows], color='#8fb3d9')
  for i, row in enumerate(rows):
    left.plot(errors[row], [i] * len(errors[row]), 'k.', markersize=6)
  left.set_xlabel('test error (%) at the best validation step')
  left.set_title('Fashion-MNIST, 1000 labels, same budget per run')
  for row, per_step, label in (('kp1_fisher_f', 2, 'SSL: K+1, Fisher(f)'),
                               ('supervised', 1, 'supervised only')):
    run_dir = os.path.join(root, f'{row}_s0')
    if os.path.isdir(run_dir):
      curve = validation_curve(run_dir)
      right.plot([s * per_step for s, _ in curve], [e for _, e in curve], 'o-', label=label)
  right.set_xlabel('critic iterations')
  right.set_ylabel('validation error (%)')
  right.set_title('validation error during training (seed 0)')
  right.legend()
  fig.tight_layout()
  out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fashion_mnist.png')
  fig.savefig(out, dpi=110)
  print(out)
  for row in rows:
    print(f'{row}: {np.mean(errors[row]):.2f} ± {np.std(errors[row]):.2f} (n={len(errors[row])})')


if __name__ == '__main__':
  main(sys.argv[1])
