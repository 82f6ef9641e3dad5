"""SIGTERM (a cluster's preemption) mid-run: one line, exit 143, a checkpoint at the step in
progress, no lock left; rerunning resumes there and ends bit-identical to an uninterrupted
run (deterministic ops), its checkpoints' save counter included. SIGTERM once the last step
is done lets the export finish: exit 0, a finished run, no lock."""
import json
import os
import re
import signal

import numpy as np
import pytest
import tensorflow as tf

from tests.reliability import checks
from tests.training import runs

STEPS = 12


def _bindings(data_dir):
  # Checkpoints only at the end: the one SIGTERM writes is its own.
  return runs.tiny_bindings(data_dir, **{
      'train.steps': STEPS, 'train.checkpoint_every': 1000, 'train.eval_every': 5,
      'train.log_every': 1, 'train.deterministic_ops': True, 'train.export_classifier': False})


@pytest.mark.integration
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
    np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


def test_sigterm_during_the_final_export_finishes_the_run(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = str(tmp_path / 'model')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir), fault='training_done=term')
  assert result.returncode == 0, result.stderr
  assert 'Traceback' not in result.stderr and 'error:' not in result.stderr
  assert 'Finished 4 steps' in result.stdout
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  assert metrics['finished'] and metrics['exported']
  assert os.path.isfile(os.path.join(model_dir, 'export', 'saved_model.pb'))
  assert not os.path.exists(os.path.join(model_dir, 'train.lock'))
