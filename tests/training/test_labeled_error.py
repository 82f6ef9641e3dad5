"""The labeled-set error a run records at every evaluation, against an independent count:
the run's own 20 labeled images rebuilt from its data settings, classified by the restored
critic (the last step) and by the exported classifier (the best validation step), the
mistakes counted in NumPy."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs

NUM_LABELED = 20


@pytest.fixture(scope='module')
def finished_run(tmp_path_factory):
  data_dir = runs.make_data(tmp_path_factory.mktemp('data'))
  model_dir = str(tmp_path_factory.mktemp('run') / 'model')
  # Evaluated at steps 8, 16, ..., 40; a critic wide enough, with layer norm and a learning
  # rate x 5, to start fitting its labels within those steps (a classifier that predicts
  # one class would make every balanced split's error 90%).
  result = runs.run_train(model_dir, runs.tiny_bindings(
      data_dir, **{'train.steps': 40, 'train.eval_every': 8, 'train.checkpoint_every': 20,
                   'train.learning_rate_scale': 5.0, 'build_critic.width': 0.25,
                   'build_critic.normalization': "'layer_norm'"}))
  assert result.returncode == 0, result.stdout + result.stderr
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  return data_dir, model_dir, metrics


def _labeled_set(data_dir):
  """The run's labeled images, rebuilt from tiny_bindings' data settings (split seed 0)."""
  from tf_ipmssl.data import ssl_data  # pylint: disable=g-import-not-at-top
  data = ssl_data.build_ssl_data(dataset='fashion_mnist', source='local', data_dir=data_dir,
                                 num_labeled=NUM_LABELED, validation_size=20)
  assert len(data.labeled_labels) == NUM_LABELED
  return data.labeled_images, np.asarray(data.labeled_labels)


def _percent_wrong(predicted, labels):
  return 100.0 * np.count_nonzero(np.asarray(predicted) != labels) / len(labels)


def test_final_labeled_error_counts_the_last_critics_mistakes(finished_run):
  from tf_ipmssl.data import pipelines  # pylint: disable=g-import-not-at-top
  data_dir, model_dir, metrics = finished_run
  images, labels = _labeled_set(data_dir)
  critic, _ = runs.restore_run(model_dir).restore_critic('latest')
  logits = critic.classify(pipelines.to_model_input(tf.constant(images)), training=False)
  expected = _percent_wrong(np.argmax(logits.numpy(), axis=-1), labels)
  assert metrics['final']['step'] == 40
  assert expected < 90.0  # not a one-class classifier
  assert metrics['final']['labeled_error'] == pytest.approx(expected)


def test_best_labeled_error_counts_the_exported_classifiers_mistakes(finished_run):
  from tf_ipmssl.training import export  # pylint: disable=g-import-not-at-top
  data_dir, model_dir, metrics = finished_run
  images, labels = _labeled_set(data_dir)
  assert metrics['exported'] == {'checkpoint': 'best', 'step': metrics['best']['step']}
  predicted = export.LoadedClassifier(os.path.join(model_dir, 'export'))(images)['labels']
  assert metrics['best']['labeled_error'] == pytest.approx(_percent_wrong(predicted, labels))


def test_labeled_error_in_tensorboard_at_every_evaluation(finished_run):
  _, model_dir, metrics = finished_run
  from tf_ipmssl.training import summaries  # pylint: disable=g-import-not-at-top
  values = dict(summaries.read_scalars(os.path.join(model_dir, 'eval'))['eval/labeled_error'])
  assert sorted(values) == [8, 16, 24, 32, 40]
  assert len(set(values.values())) > 1
  assert values[40] == pytest.approx(metrics['final']['labeled_error'])
  assert values[metrics['best']['step']] == pytest.approx(metrics['best']['labeled_error'])
  # Multiples of 100 / 20 = 5 %: a count over the 20 labeled images, not another split's.
  assert all(v % 5.0 == pytest.approx(0.0, abs=1e-4) or v % 5.0 == pytest.approx(5.0)
             for v in values.values())
