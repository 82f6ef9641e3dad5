"""SIGTERM (a cluster's preemption) mid-run: one line, exit 143, a checkpoint at the step in
progress, no lock left; rerunning resumes there and ends bit-identical to an uninterrupted
run (deterministic ops)."""
import os
import re
import signal

import numpy as np
import tensorflow as tf

from tests.reliability import checks
from tests.training import runs

STEPS = 12


def _bindings(data_dir):
  # Checkpoints only at the end: the one SIGTERM writes is its own.
  return runs.tiny_bindings(data_dir, **{
      'train.steps': STEPS, 'train.checkpoint_every': 1000, 'train.eval_every': 5,
      'train.log_every': 1, 'train.deterministic_ops': True, 'train.export_classifier': False})


def test_sigterm_checkpoints_the_current_step_and_resumes_bit_identically(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  reference_dir, model_dir = str(tmp_path / 'reference'), str(tmp_path / 'preempted')
  reference = runs.run_train(reference_dir, _bindings(data_dir))
  assert reference.returncode == 0, reference.stderr

  returncode, stderr = checks.signal_mid_run(model_dir, _bindings(data_dir), signal.SIGTERM)
  assert returncode == 143, stderr
  error = checks.one_error_line(stderr)
  match = re.match(r'error: terminated \(SIGTERM\) at step (\d+); checkpoint (\S+) written: '
                   r'rerun the same command to resume$', error)
  assert match, error
  step = int(match.group(1))
  assert 3 <= step < STEPS
  assert match.group(2) == os.path.join(model_dir, 'checkpoints', f'ckpt-{step}')
  assert tf.train.latest_checkpoint(os.path.join(model_dir, 'checkpoints')) == match.group(2)
  assert not os.path.exists(os.path.join(model_dir, 'train.lock'))

  resumed = runs.run_train(model_dir, _bindings(data_dir))
  assert resumed.returncode == 0, resumed.stderr
  assert f'Resuming from {match.group(2)}' in resumed.stdout
  expected = runs.checkpoint_values(os.path.join(reference_dir, 'checkpoints', f'ckpt-{STEPS}'))
  actual = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', f'ckpt-{STEPS}'))
  assert expected.keys() == actual.keys()
  for name in expected:
    if name.startswith('save_counter'):  # How often a checkpoint was written, not state.
      continue
    np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
