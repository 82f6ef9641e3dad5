"""The labeled-set error a run records at every evaluation, against an independent count.

End to end: the run's own 20 labeled images, rebuilt from its data settings, classified by the
restored critic (the last step) and by the exported classifier (the best validation step), the
mistakes counted in NumPy for whatever the critic predicts (a tiny run may or may not have
started to fit its labels, depending on the CPU's rounding). In process: an evaluation with a
classifier whose predictions are set (not all one class), so that each split's count is known.
"""
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
  result = runs.run_train(model_dir, runs.tiny_bindings(
      data_dir, **{'train.steps': 8, 'train.eval_every': 2, 'train.checkpoint_every': 4}))
  assert result.returncode == 0, result.stdout + result.stderr
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  return data_dir, model_dir, metrics


def _ssl_data(data_dir):
  """The run's data, rebuilt from tiny_bindings' data settings (split seed 0)."""
  from tf_ipmssl.data import ssl_data  # pylint: disable=g-import-not-at-top
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData(dataset='fashion_mnist', source='local',
                                                       data_dir=data_dir, num_labeled=NUM_LABELED,
                                                       validation_size=20))
  assert len(data.labeled_labels) == NUM_LABELED
  return data


def _labeled_set(data_dir):
  data = _ssl_data(data_dir)
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
  assert metrics['final']['step'] == 8
  assert metrics['final']['labeled_error'] == pytest.approx(expected)


def test_best_labeled_error_counts_the_exported_classifiers_mistakes(finished_run):
  from tf_ipmssl.serving import export  # pylint: disable=g-import-not-at-top
  data_dir, model_dir, metrics = finished_run
  images, labels = _labeled_set(data_dir)
  assert metrics['exported'] == {'checkpoint': 'best', 'step': metrics['best']['step']}
  predicted = export.LoadedClassifier(os.path.join(model_dir, 'export'))(images)['labels']
  assert metrics['best']['labeled_error'] == pytest.approx(_percent_wrong(predicted, labels))


def test_labeled_error_in_tensorboard_at_every_evaluation(finished_run):
  _, model_dir, metrics = finished_run
  from tf_ipmssl.training import tensorboard  # pylint: disable=g-import-not-at-top
  values = dict(tensorboard.read_scalars(os.path.join(model_dir, 'eval'))['eval/labeled_error'])
  assert sorted(values) == [2, 4, 6, 8]
  assert values[8] == pytest.approx(metrics['final']['labeled_error'])
  assert values[metrics['best']['step']] == pytest.approx(metrics['best']['labeled_error'])
  # Multiples of 100 / 20 = 5 %: a count over the 20 labeled images, not another split's.
  assert all(v % 5.0 == pytest.approx(0.0, abs=1e-4) or v % 5.0 == pytest.approx(5.0)
             for v in values.values())


def _bright_pixel_classes(images):
  """A classifier set by hand: the class is the number of pixels >= 128, modulo 10."""
  return np.count_nonzero(images.reshape(len(images), -1) >= 128, axis=1) % 10


def test_an_evaluation_counts_each_splits_mistakes_of_a_set_classifier(tmp_path):
  """Loop.evaluate with its classifier replaced by `_bright_pixel_classes` (on the model input
  x = pixel / 127.5 − 1, padded with −1: a pixel >= 128 is x > 0): each split's error is
  that classifier's count of mistakes on that split."""
  from tf_ipmssl.objectives import fisher  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import loop as loop_lib  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import run as run_lib  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import run_config  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import trainer  # pylint: disable=g-import-not-at-top
  data = _ssl_data(runs.make_data(tmp_path / 'data'))
  config = run_config.RunConfig.create(settings={'constraints': (fisher.Fisher(),)}, steps=4,
                                       batch_size=16, critic={'width': 0.0625})
  model_dir = str(tmp_path / 'run')
  run = run_lib.Run.build(config, num_classes=data.num_classes, image_shape=data.image_shape,
                          model_dir=model_dir)
  loop = loop_lib.Loop(model_dir, data, run, trainer.training_length(data, config), {}, 0)

  def predict(x):
    bright = tf.math.count_nonzero(tf.reshape(x, [tf.shape(x)[0], -1]) > 0, axis=1)
    return tf.cast(bright % 10, tf.int32)
  loop.predict = predict
  loop.evaluate(4, last=True)

  expected = {}
  for split in ('labeled', 'validation', 'test'):
    images, labels = getattr(data, f'{split}_images'), np.asarray(getattr(data, f'{split}_labels'))
    predicted = _bright_pixel_classes(images)
    assert len(set(predicted)) > 2  # Not a one-class classifier: the count can be wrong.
    expected[f'{split}_error'] = _percent_wrong(predicted, labels)
  assert len(set(expected.values())) == 3  # Each split's own count, told apart.
  assert {k: loop.latest[k] for k in expected} == pytest.approx(expected)
  assert loop.latest['step'] == 4
  best = {k: float(run.state.best[k].numpy()) for k in expected}
  assert best == pytest.approx(expected)  # The first evaluation is the best so far.
  # metrics.json's content: the counts' rates exactly, read back from the float32 run state.
  content = loop.metrics(4, finished=False)
  assert content['best'] == content['final'] == {'step': 4, **expected}
