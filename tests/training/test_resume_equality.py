"""A run killed (SIGKILL) mid-way and resumed ends with the weights of an uninterrupted run,
and its metrics.json's wall time counts both sessions."""
import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs


def _bindings(data_dir):
  return runs.tiny_bindings(data_dir, **{
      'train.steps': 8, 'train.checkpoint_every': 1, 'train.eval_every': 3,
      'train.log_every': 1, 'train.deterministic_ops': True, 'train.export_classifier': False,
      'ssl.constraints': '[@Fisher(), @Sobolev()]', 'Sobolev.component': "'f_neg'"})


@pytest.mark.integration
def test_kill_and_resume_matches_uninterrupted_run(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  reference_dir, killed_dir = str(tmp_path / 'reference'), str(tmp_path / 'killed')
  reference = runs.run_train(reference_dir, _bindings(data_dir))
  assert reference.returncode == 0, reference.stderr

  process = subprocess.Popen(runs.train_command(killed_dir, _bindings(data_dir)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=runs.environment(), cwd=str(runs.REPO_ROOT))
  checkpoint_dir = os.path.join(killed_dir, 'checkpoints')
  deadline = time.time() + 300
  while time.time() < deadline and process.poll() is None:
    latest = tf.train.latest_checkpoint(checkpoint_dir) if os.path.isdir(checkpoint_dir) else None
    if latest and int(latest.rsplit('-', 1)[1]) >= 3:
      break
    time.sleep(0.05)
  assert process.poll() is None, 'the run ended before it could be killed'
  process.send_signal(signal.SIGKILL)
  process.wait()
  killed_at = int(tf.train.latest_checkpoint(checkpoint_dir).rsplit('-', 1)[1])
  assert killed_at < 8
  with open(os.path.join(killed_dir, 'metrics.json')) as f:
    before = json.load(f)
  wall_before, split_before = before['wall_seconds'], before['wall_split']
  # Its split adds up to its wall time: both are read at one instant.
  assert wall_before > 0 and abs(sum(split_before.values()) - wall_before) < 1e-6

  resumed = runs.run_train(killed_dir, _bindings(data_dir))
  assert resumed.returncode == 0, resumed.stderr
  assert 'Resuming from' in resumed.stdout
  with open(os.path.join(killed_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  # The first session's time up to its last metrics.json plus the whole second session's.
  assert abs(metrics['wall_seconds']
             - (wall_before + metrics['wall_seconds_this_session'])) < 1e-6, metrics
  # So is its split, part by part, adding up to the wall time.
  session = metrics['wall_split_this_session']
  for part, seconds in metrics['wall_split'].items():
    assert abs(seconds - (split_before[part] + session[part])) < 1e-6, part
  assert abs(sum(metrics['wall_split'].values()) - metrics['wall_seconds']) < 1e-6

  expected = runs.checkpoint_values(tf.train.latest_checkpoint(
      os.path.join(reference_dir, 'checkpoints')))
  actual = runs.checkpoint_values(tf.train.latest_checkpoint(checkpoint_dir))
  assert expected.keys() == actual.keys()
  names = [k for k in expected if 'critic' in k or 'generator' in k or 'lambda' in k
           or 'multipliers' in k]
  assert len(names) > 20
  for name in expected:
    if name.startswith('save_counter'):  # How often a checkpoint was written, not state.
      continue
    np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


def test_a_kill_after_the_last_checkpoint_reruns_to_the_same_metrics(tmp_path):
  """Killed between the last checkpoint and its metrics.json, the rerun (which only exports
  and reports, from the checkpoint's run state) writes the uninterrupted run's metrics.json,
  on splits whose error rates float32 cannot hold (31 images: 100 k / 31)."""
  data_dir = runs.make_data(tmp_path / 'data', num_test=31)
  bindings = runs.tiny_bindings(data_dir, **{'build_ssl_data.validation_size': 31,
                                             'train.deterministic_ops': True})
  reference_dir, killed_dir = str(tmp_path / 'reference'), str(tmp_path / 'killed')
  reference = runs.run_train(reference_dir, bindings)
  assert reference.returncode == 0, reference.stderr
  # Checkpoints at steps 2 and 4: the second is the last.
  killed = runs.run_train(killed_dir, bindings, fault='checkpoint_written#2=kill')
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  assert _metrics(killed_dir)['step'] == 2
  rerun = runs.run_train(killed_dir, bindings)
  assert rerun.returncode == 0, rerun.stderr

  expected, actual = _metrics(reference_dir), _metrics(killed_dir)
  for which in ('final', 'best'):
    for key in ('validation_error', 'test_error'):
      value = expected[which][key]
      assert float(np.float32(value)) != value, (which, key, value)  # Not float32-exact.
      assert value == 100.0 * round(value * 31 / 100.0) / 31  # A count over 31 images.
  for metrics in (expected, actual):
    for key in ('wall_seconds', 'wall_seconds_this_session', 'wall_split',
                'wall_split_this_session'):
      del metrics[key]
  assert json.dumps(actual) == json.dumps(expected)


def _metrics(model_dir):
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    return json.load(f)
