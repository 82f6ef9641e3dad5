"""A run's life on disk: a finished run only reports and writes nothing; a run
killed during its final export exports again on rerun; a second trainer on one model_dir is
refused while a stale lock is taken over; leftover checkpoint temp directories go; a kill
between a checkpoint and its metrics.json loses no evaluation; an unreadable metrics.json is
one line and is written again."""
import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

from tests.reliability import checks
from tests.training import runs


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  """The test run's tiny data (runs.shared_data), which finished_run was trained on."""
  return runs.shared_data(tmp_path_factory)


@pytest.fixture(scope='module')
def finished_run(tmp_path_factory):
  """A copy of the test run's tiny run (runs.shared_run)."""
  return runs.copy_of_shared_run(tmp_path_factory, tmp_path_factory.mktemp('run') / 'model')[1]


def _snapshot(directory):
  return {os.path.join(root, name): os.stat(os.path.join(root, name)).st_mtime_ns
          for root, _, names in os.walk(directory) for name in names}


def _metrics(model_dir):
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    return json.load(f)


def test_rerun_of_finished_run_writes_nothing(finished_run, data_dir):
  before = _snapshot(finished_run)
  result = runs.run_train(finished_run, runs.tiny_bindings(data_dir))
  assert result.returncode == 0, result.stderr
  assert 'already finished (4 steps); nothing to do' in result.stdout
  assert 'Finished 4 steps: test error' in result.stdout
  # Nothing written, so a read-only model_dir works the same (no lock, no config rewrite).
  assert _snapshot(finished_run) == before


def test_killed_export_is_repaired_on_rerun(finished_run, data_dir, tmp_path):
  model_dir = str(tmp_path / 'model')
  shutil.copytree(finished_run, model_dir)
  versions = json.load(open(os.path.join(model_dir, 'versions.json')))
  checkpoints = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', 'ckpt-4'))
  # What kill -9 during the final export leaves: a partial export.tmp (with the marker an
  # export writes first), no export/, and the metrics of the last checkpoint (written
  # "finished" by the old trainer).
  shutil.copytree(os.path.join(model_dir, 'export'), os.path.join(model_dir, 'export.tmp'))
  os.remove(os.path.join(model_dir, 'export.tmp', 'tf_ipmssl_classifier.json'))
  open(os.path.join(model_dir, 'export.tmp', '.tf_ipmssl_partial_export'), 'w').close()
  shutil.rmtree(os.path.join(model_dir, 'export'))
  metrics = _metrics(model_dir)
  del metrics['exported']
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    json.dump(metrics, f)
  # And a checkpoint write killed half-way.
  os.makedirs(os.path.join(model_dir, 'checkpoints', 'ckpt-6_temp'))

  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir))
  assert result.returncode == 0, result.stderr
  assert 'exporting again' in result.stdout
  # The repaired export answers as the finished run's own, bit for bit (one checkpoint, one
  # machine), with the same metadata.
  images = np.random.default_rng(0).integers(0, 256, [6, 28, 28, 1], dtype=np.uint8)
  checks.assert_same_answers(checks.export_answers(os.path.join(model_dir, 'export'), images),
                             checks.export_answers(os.path.join(finished_run, 'export'), images))
  assert not os.path.exists(os.path.join(model_dir, 'export.tmp'))
  assert not os.path.exists(os.path.join(model_dir, 'checkpoints', 'ckpt-6_temp'))
  repaired = _metrics(model_dir)
  assert repaired['finished'] and repaired['exported'] == _metrics(finished_run)['exported']
  # No training happened: the checkpoint is the same.
  after = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', 'ckpt-4'))
  assert after.keys() == checkpoints.keys()
  assert all((after[k] == checkpoints[k]).all() for k in after)
  # versions.json keeps the first start's record and appends the resume.
  kept = json.load(open(os.path.join(model_dir, 'versions.json')))
  assert kept['started'] == versions['started'] and len(kept['resumes']) == 1
  assert not os.path.exists(os.path.join(model_dir, 'train.lock'))


def test_an_unreadable_metrics_file_is_one_line_and_written_again(finished_run, data_dir,
                                                                  tmp_path):
  model_dir = str(tmp_path / 'model')
  shutil.copytree(finished_run, model_dir)
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    f.write('{"finished": tr')  # Cut short, or bytes flipped: no JSON.
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir))
  assert result.returncode == 0, result.stderr
  assert 'Traceback' not in result.stderr and 'JSONDecodeError' not in result.stderr
  lines = [line for line in result.stdout.splitlines() if 'metrics.json' in line]
  assert lines == [f'{model_dir}/metrics.json is damaged and cannot be read '
                   '(JSONDecodeError: Expecting value: line 1 column 14 (char 13)); read as '
                   'missing: the run goes on from its latest checkpoint and writes it again']
  assert 'Finished 4 steps: test error' in result.stdout
  metrics, reference = _metrics(model_dir), _metrics(finished_run)
  for key in ('step', 'finished', 'final', 'best', 'exported'):
    assert metrics[key] == reference[key], key


def test_second_trainer_is_refused_and_stale_lock_taken_over(finished_run, data_dir, tmp_path):
  import socket  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path / 'model')
  shutil.copytree(finished_run, model_dir)
  shutil.rmtree(os.path.join(model_dir, 'export'))  # So that the rerun has work to do.
  lock = os.path.join(model_dir, 'train.lock')
  with open(lock, 'w') as f:  # This pytest process plays the running trainer.
    json.dump({'host': socket.gethostname(), 'pid': os.getpid()}, f)
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir))
  checks.assert_one_error_line(result, f'is in use by another trainer (PID {os.getpid()}',
                               'wait for it to finish, or use another --model_dir')
  assert not os.path.exists(os.path.join(model_dir, 'export'))

  dead = subprocess.run([sys.executable, '-c', 'import os; print(os.getpid())'],
                        capture_output=True, text=True, check=True)
  with open(lock, 'w') as f:  # A killed trainer's lock.
    json.dump({'host': socket.gethostname(), 'pid': int(dead.stdout)}, f)
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir))
  assert result.returncode == 0, result.stderr
  assert os.path.isfile(os.path.join(model_dir, 'export', 'saved_model.pb'))
  assert not os.path.exists(lock)


def test_ctrl_c_prints_one_line_and_exits_130(data_dir, tmp_path):
  model_dir = str(tmp_path / 'model')
  returncode, stderr = checks.signal_mid_run(
      model_dir, runs.tiny_bindings(data_dir, **{'train.steps': 500, 'train.log_every': 1}),
      signal.SIGINT)
  assert returncode == 130, stderr
  checks.one_error_line(stderr, 'interrupted at step', 'rerun the same command to resume')
  assert not os.path.exists(os.path.join(model_dir, 'train.lock'))


def test_a_kill_between_the_last_checkpoint_and_metrics_keeps_its_evaluation(
    finished_run, data_dir, tmp_path):
  model_dir = str(tmp_path / 'model')
  # The second checkpoint is the last step's: killed before metrics.json says step 4.
  killed = runs.run_train(model_dir, runs.tiny_bindings(data_dir),
                          fault='checkpoint_written#2=kill')
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  assert _metrics(model_dir)['step'] == 2
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir))
  assert result.returncode == 0, result.stderr
  assert 'exporting again' in result.stdout
  assert 'n/a' not in result.stdout
  metrics, reference = _metrics(model_dir), _metrics(finished_run)
  assert metrics['final']['step'] == 4 and metrics['final']['test_error'] is not None
  for key in ('step', 'finished', 'final', 'best', 'exported'):
    assert metrics[key] == reference[key], key


def test_a_checkpoint_written_before_the_latest_evaluation_was_kept_resumes(
    finished_run, tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  run = runs.restore_run(finished_run)
  latest = run.manager.latest_checkpoint
  run.restore(latest)
  # The same checkpoint as the trainer wrote it before it kept final/.
  legacy = tf.train.Checkpoint(**{k: v for k, v in run.checkpointed.items() if k != 'final'})
  legacy.save_counter.assign(run.manager.checkpoint.save_counter)
  path = legacy.write(str(tmp_path / 'legacy' / 'ckpt-4'))
  assert not any(n.startswith('final/') for n, _ in tf.train.list_variables(path))

  resumed = runs.restore_run(finished_run)
  resumed.restore_to_train(path)
  assert int(resumed.state.latest['step'].numpy()) == -1  # metrics.json's final stands in.
  assert int(resumed.state.counters['step'].numpy()) == 4
  assert int(resumed.manager.checkpoint.save_counter.numpy()) == int(
      run.manager.checkpoint.save_counter.numpy())
  for before, after in zip(run.critic.weights, resumed.critic.weights):
    assert (before.numpy() == after.numpy()).all(), before.name


def test_a_checkpoint_written_before_the_labeled_error_was_recorded_resumes(
    finished_run, tmp_path):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  run = runs.restore_run(finished_run)
  run.restore(run.manager.latest_checkpoint)
  # The same checkpoint as the trainer wrote it when it kept final/ but no labeled error.
  def without_labeled_error(part):
    return tf.train.Checkpoint(**{k: v for k, v in part.items() if k != 'labeled_error'})
  legacy = tf.train.Checkpoint(**dict(run.checkpointed, best=without_labeled_error(run.state.best),
                                      final=without_labeled_error(run.state.latest)))
  legacy.save_counter.assign(run.manager.checkpoint.save_counter)
  path = legacy.write(str(tmp_path / 'legacy' / 'ckpt-4'))
  names = [n for n, _ in tf.train.list_variables(path)]
  assert any(n.startswith('final/') for n in names)
  assert not any('labeled_error' in n for n in names)

  resumed = runs.restore_run(finished_run)
  resumed.restore_to_train(path)
  assert np.isnan(resumed.state.best['labeled_error'].numpy())  # Not known: stays NaN.
  assert np.isnan(resumed.state.latest['labeled_error'].numpy())
  for key in ('step', 'validation_error', 'test_error'):  # What it holds is restored.
    assert resumed.state.latest[key].numpy() == run.state.latest[key].numpy(), key
    assert resumed.state.best[key].numpy() == run.state.best[key].numpy(), key
  assert int(resumed.state.counters['step'].numpy()) == 4
  assert int(resumed.manager.checkpoint.save_counter.numpy()) == int(
      run.manager.checkpoint.save_counter.numpy())
  for before, after in zip(run.critic.weights, resumed.critic.weights):
    assert (before.numpy() == after.numpy()).all(), before.name
