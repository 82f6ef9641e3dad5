"""bin/train end to end on tiny fake data, in subprocesses: the trainer and its command line."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs
import tf_ipmssl
from tf_ipmssl.run_dir import run_record
from tf_ipmssl.run_dir import event_files


@pytest.fixture(scope='module')
def finished_run(tmp_path_factory):
  """A copy of the test run's tiny run (runs.shared_run), which these tests train on again."""
  return runs.copy_of_shared_run(tmp_path_factory, tmp_path_factory.mktemp('run') / 'model')


def _event_tags(directory):
  tags = set()
  for name in tf.io.gfile.listdir(directory):
    for record in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
      for value in record.summary.value:
        tags.add(value.tag)
  return tags


def test_run_writes_everything(finished_run):
  _, model_dir, result = finished_run
  for name in ('config.gin', 'operative_config.gin', 'versions.json', 'metrics.json'):
    assert os.path.isfile(os.path.join(model_dir, name)), name
  assert tf.train.latest_checkpoint(os.path.join(model_dir, 'checkpoints')).endswith('ckpt-4')
  assert tf.train.latest_checkpoint(os.path.join(model_dir, 'best')) is not None
  assert os.path.isfile(os.path.join(model_dir, 'export', 'saved_model.pb'))
  versions = json.load(open(os.path.join(model_dir, 'versions.json')))
  assert versions['tensorflow'] == tf.__version__
  assert versions['numerics']['cpu_count'] == os.cpu_count()
  assert versions['source'] == run_record.git_revision(os.path.dirname(tf_ipmssl.__file__))
  assert set(versions['numerics']) >= {'intra_op_threads', 'inter_op_threads',
                                       'TF_NUM_INTRAOP_THREADS', 'TF_ENABLE_ONEDNN_OPTS'}
  assert 'ssl.constraints = [@Fisher()]' in open(os.path.join(model_dir, 'config.gin')).read()
  operative = open(os.path.join(model_dir, 'operative_config.gin')).read()
  assert 'build_critic.width = 0.0625' in operative
  assert 'step 4/4' in result.stdout and 'Finished 4 steps' in result.stdout


def test_progress_line_fields(finished_run):
  """The last step's line shows what the run logged at that step (its TensorBoard scalars,
  to 4 significant digits) and the latest validation error (metrics.json's final)."""
  _, model_dir, result = finished_run
  line = [l for l in result.stdout.splitlines() if l.startswith('step 4/4')][0]
  for field in ('epoch', 'img/s', 'ETA', 'ce', 'ipm', 'omega/fisher_f', 'lambda/fisher_f',
                'val_err'):
    assert field in line, (field, line)
  shown = dict(part.rsplit(' ', 1) for part in line.split(' | ')[4:])
  scalars = event_files.read_scalars(os.path.join(model_dir, 'train'))
  for name in ('ce', 'ipm', 'critic_loss', 'generator_loss', 'omega/fisher_f',
               'lambda/fisher_f'):
    (value,) = [v for step, v in scalars[name] if step == 4]
    assert shown[name] == f'{value:.4g}', name
  (speed,) = [v for step, v in scalars['images_per_second'] if step == 4]
  # The line rounds the float64 rate, the event keeps it in float32: within the rounding.
  shown_speed = float(line.split(' | ')[2].removesuffix(' img/s'))
  assert abs(shown_speed - speed) <= 0.05 + 1e-6 * speed
  final = json.load(open(os.path.join(model_dir, 'metrics.json')))['final']
  assert final['step'] == 4 and shown['val_err'] == f'{final["validation_error"]:.2f}%'


def test_tensorboard_tags(finished_run):
  _, model_dir, _ = finished_run
  train_tags = _event_tags(os.path.join(model_dir, 'train'))
  for tag in ('ce', 'ipm', 'critic_loss', 'generator_loss', 'omega/fisher_f', 'lambda/fisher_f',
              'norm/v', 'norm/S', 'grad_norm/critic', 'grad_norm/generator',
              'time/step_seconds', 'images_per_second', 'generator_samples'):
    assert tag in train_tags, tag
  assert {'eval/validation_error', 'eval/test_error'} <= _event_tags(
      os.path.join(model_dir, 'eval'))


def test_metrics_json(finished_run):
  _, model_dir, _ = finished_run
  metrics = json.load(open(os.path.join(model_dir, 'metrics.json')))
  assert metrics['finished'] and metrics['step'] == 4 and metrics['total_steps'] == 4
  for key in ('validation_error', 'test_error'):
    assert 0.0 <= metrics['final'][key] <= 100.0
  assert metrics['best']['step'] in (2, 4)
  assert metrics['best']['validation_error'] <= metrics['final']['validation_error']
  # The best step's test error counted again from its export's labels (the export is that
  # step's classifier): equal up to one image whose top two classes the export's graph
  # might round into the other order.
  data = tf_ipmssl.load(model_dir).data()
  labels = tf_ipmssl.predict(os.path.join(model_dir, 'export'), data.test_images).labels
  wrong = int(np.sum(labels != data.test_labels))
  recorded = metrics['best']['test_error'] * len(data.test_labels) / 100
  assert abs(wrong - recorded) <= 1 + 1e-9, (wrong, recorded)
  # λ_F after 4 steps of 2 critic iterations: 8 updates of ρ·Ω with Ω ≥ −1.
  assert metrics['multipliers']['fisher_f'] >= -8 * 1e-7 - 1e-12


def test_rerun_of_finished_run_does_nothing(finished_run):
  data_dir, model_dir, _ = finished_run
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir))
  assert result.returncode == 0, result.stderr
  assert 'already finished' in result.stdout


def test_resume_continues_from_saved_step(finished_run, tmp_path):
  data_dir, _, _ = finished_run
  model_dir = str(tmp_path / 'model')
  first = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{'train.steps': 2}))
  assert first.returncode == 0, first.stderr
  # The training length may grow on resume; the run's identity stays.
  second = runs.run_train(model_dir, runs.tiny_bindings(data_dir))
  assert second.returncode == 0, second.stderr
  assert 'Resuming from' in second.stdout and 'ckpt-2' in second.stdout
  assert 'step 4/4' in second.stdout and 'step 2/4' not in second.stdout


def test_resume_with_other_config_is_refused(finished_run):
  data_dir, model_dir, _ = finished_run
  before = runs.checkpoint_values(tf.train.latest_checkpoint(
      os.path.join(model_dir, 'checkpoints')))
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{'ssl.lambda_ce': 0.5}))
  assert result.returncode == 1
  assert 'different configuration' in result.stderr and 'Traceback' not in result.stderr
  after = runs.checkpoint_values(tf.train.latest_checkpoint(
      os.path.join(model_dir, 'checkpoints')))
  assert before.keys() == after.keys()
  assert all(np.array_equal(before[k], after[k]) for k in before)


def test_supervised_mode(finished_run, tmp_path):
  data_dir, _, _ = finished_run
  model_dir = str(tmp_path / 'model')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{'train.mode': "'supervised'"}))
  assert result.returncode == 0, result.stderr
  metrics = json.load(open(os.path.join(model_dir, 'metrics.json')))
  assert metrics['finished'] and metrics['multipliers'] == {}
  assert 'Training supervised' in result.stdout
  # No generator is built, so none is checkpointed.
  saved = runs.checkpoint_values(tf.train.latest_checkpoint(os.path.join(model_dir,
                                                                         'checkpoints')))
  assert saved and not [k for k in saved if k.startswith('generator')]


def test_test_set_is_evaluated_only_where_it_can_be_reported(finished_run, tmp_path):
  """The test error is computed at the evaluations whose validation error is a new best and
  at the last step, nowhere else; the reported numbers are those evaluations'."""
  data_dir, _, _ = finished_run
  model_dir = str(tmp_path / 'model')
  # A critic learning rate of 0 keeps the critic's weights (whatever the CPU): its validation
  # error never changes, so step 1 is the only new best.
  result = runs.run_train(model_dir, runs.tiny_bindings(
      data_dir, **{'train.steps': 8, 'train.eval_every': 1, 'train.log_every': 4,
                   'train.critic_learning_rate': 0.0}))
  assert result.returncode == 0, result.stderr
  eval_dir = os.path.join(model_dir, 'eval')
  scalars = event_files.read_scalars(eval_dir)
  validation = dict(scalars['eval/validation_error'])
  test = dict(scalars['eval/test_error'])
  assert sorted(validation) == list(range(1, 9))
  assert len(set(validation.values())) == 1
  assert set(test) == {1, 8}
  metrics = json.load(open(os.path.join(model_dir, 'metrics.json')))
  assert metrics['best']['test_error'] == pytest.approx(test[metrics['best']['step']])
  assert metrics['final']['test_error'] == pytest.approx(test[8])
