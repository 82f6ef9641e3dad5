"""The augmentation page's part against numbers computed here with NumPy."""
import json
import os

import numpy as np

from studies.fashion_mnist_100 import augmentation_page

QUICKSTART, SUPERVISED = (cell_id for cell_id, _ in augmentation_page.CELLS)


def _record(root, arm, cell_id, seed, test, final, labeled, cpu='CPU A'):
  run = os.path.join(root, arm, *cell_id.split('/'), f'seed_{seed}')
  os.makedirs(run)
  with open(os.path.join(run, 'metrics.json'), 'w') as f:
    json.dump({'finished': True, 'step': 900, 'best': {'test_error': test,
                                                        'labeled_error': labeled},
               'final': {'test_error': final}}, f)
  with open(os.path.join(run, 'versions.json'), 'w') as f:
    json.dump({'numerics': {'cpu': {'model_name': cpu}}}, f)


def test_arms_and_paired_differences(tmp_path):
  plain = {0: (30.0, 31.0, 2.0), 1: (28.5, 29.0, 1.0), 2: (33.25, 35.0, 0.0)}
  augmented = {0: (27.0, 27.5, 5.0), 1: (29.0, 30.0, 4.0), 2: (30.25, 31.0, 6.0)}
  for seed in range(3):
    _record(tmp_path, 'plain', QUICKSTART, seed, *plain[seed])
    _record(tmp_path, 'augmented', QUICKSTART, seed, *augmented[seed])
  _record(tmp_path, 'plain', SUPERVISED, 0, 34.0, 35.0, 0.0)
  _record(tmp_path, 'augmented', SUPERVISED, 0, 31.0, 32.0, 3.0, cpu='CPU B')
  _record(tmp_path, 'augmented', SUPERVISED, 1, 30.0, 32.0, 3.0)  # No plain partner.
  text = augmentation_page.part(augmentation_page.collect(str(tmp_path)))

  tests = np.array([plain[s][0] for s in range(3)])
  row = next(line for line in text.splitlines() if line.startswith('| quickstart')
             and '| plain |' in line)
  assert f'{tests.mean():.2f} ± {tests.std(ddof=1):.2f}' in row
  finals = np.array([augmented[s][1] for s in range(3)])
  row = next(line for line in text.splitlines() if line.startswith('| quickstart')
             and '| augmented |' in line)
  assert f'{finals.mean():.2f} ± {finals.std(ddof=1):.2f}' in row

  diffs = [augmented[s][0] - plain[s][0] for s in range(3)]  # −3.00, +0.50, −3.00
  line = next(line for line in text.splitlines() if line.startswith('- quickstart'))
  assert '-3.00 (seed 0) / +0.50 (seed 1) / -3.00 (seed 2)' in line
  walsh = [(diffs[i] + diffs[j]) / 2 for i in range(3) for j in range(i, 3)]
  # Three seeds: the interval is [min, max] of the Walsh averages, covering 1 − 2/8.
  assert f'HL {np.median(walsh):+.1f} [{min(walsh):+.1f}, {max(walsh):+.1f}] (75%)' in line
  assert 'different CPUs' not in line

  line = next(line for line in text.splitlines() if line.startswith('- supervised'))
  assert '-3.00 (seed 0);' in line and 'seed 1' not in line
  assert 'different CPUs' in line
  assert 'Trained on: CPU A; CPU B.' in text


def test_no_runs_yet(tmp_path):
  text = augmentation_page.part(augmentation_page.collect(str(tmp_path)))
  assert text.count('none yet') == 4
  assert text.count('no seed with both arms finished yet') == 2
  assert 'Trained on: no run finished yet.' in text
