"""The labeled-set error and the per-class results a run records at every evaluation, against
an independent count.

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
  from tf_ipmssl.serving import runtimes  # pylint: disable=g-import-not-at-top
  data_dir, model_dir, metrics = finished_run
  images, labels = _labeled_set(data_dir)
  assert metrics['exported'] == {'checkpoint': 'best', 'step': metrics['best']['step']}
  predicted = runtimes.open_classifier(os.path.join(model_dir, 'export'))(images)['labels']
  assert metrics['best']['labeled_error'] == pytest.approx(_percent_wrong(predicted, labels))


def test_labeled_error_in_tensorboard_at_every_evaluation(finished_run):
  _, model_dir, metrics = finished_run
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  values = dict(event_files.read_scalars(os.path.join(model_dir, 'eval'))['eval/labeled_error'])
  assert sorted(values) == [2, 4, 6, 8]
  assert values[8] == pytest.approx(metrics['final']['labeled_error'])
  assert values[metrics['best']['step']] == pytest.approx(metrics['best']['labeled_error'])
  # Multiples of 100 / 20 = 5 %: a count over the 20 labeled images, not another split's.
  assert all(v % 5.0 == pytest.approx(0.0, abs=1e-4) or v % 5.0 == pytest.approx(5.0)
             for v in values.values())


def _bright_pixel_classes(images):
  """A classifier set by hand: the class is the number of pixels >= 128, modulo 10."""
  return np.count_nonzero(images.reshape(len(images), -1) >= 128, axis=1) % 10


def _loop_of_a_set_classifier(tmp_path):
  """A run's Loop whose classifier is replaced by `_bright_pixel_classes` (on the model input
  x = pixel / 127.5 − 1, padded with −1: a pixel >= 128 is x > 0), evaluated at step 4, the
  last; returns (loop, data, run)."""
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
  return loop, data, run


def test_an_evaluation_counts_each_splits_mistakes_of_a_set_classifier(tmp_path):
  """Each split's error is the set classifier's count of mistakes on that split."""
  loop, data, run = _loop_of_a_set_classifier(tmp_path)
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
  keys = ('step', *expected)
  assert ({k: content['best'][k] for k in keys} == {k: content['final'][k] for k in keys} ==
          {'step': 4, **expected})


def test_an_evaluation_reports_each_splits_confusion_matrix_of_a_set_classifier(tmp_path):
  """metrics.json's per-class results of the validation and test splits, at the best and the
  last evaluation, against NumPy's count of the set classifier's answers: each matrix's rows
  sum to the split's images of each class, its trace gives exactly the reported error, and
  the class errors and balanced error are the rows' rates and their mean; TensorBoard has the
  same numbers and the matrix as an image."""
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  loop, data, _ = _loop_of_a_set_classifier(tmp_path)
  content = loop.metrics(4, finished=False)
  scalars = event_files.read_scalars(os.path.join(loop.model_dir, 'eval'))
  for split in ('validation', 'test'):
    images, labels = getattr(data, f'{split}_images'), np.asarray(getattr(data, f'{split}_labels'))
    predicted = _bright_pixel_classes(images)
    expected = np.zeros([10, 10], np.int64)
    for true, answer in zip(labels, predicted):
      expected[true, answer] += 1
    rows = np.bincount(labels, minlength=10)
    class_errors = {name: (100.0 * (rows[c] - expected[c, c]) / rows[c] if rows[c] else None)
                    for c, name in enumerate(data.class_names)}
    present = [e for e in class_errors.values() if e is not None]
    assert len(set(present)) >= 2  # Not one rate for every class: the rows are told apart.
    for part in ('best', 'final'):
      reported = content[part]
      matrix = np.array(reported[f'{split}_confusion'])
      np.testing.assert_array_equal(matrix, expected)
      np.testing.assert_array_equal(matrix.sum(axis=1), rows)
      assert reported[f'{split}_error'] == 100.0 * (len(labels) - np.trace(matrix)) / len(labels)
      assert reported[f'{split}_class_errors'] == pytest.approx(class_errors)
      assert list(reported[f'{split}_class_errors']) == list(data.class_names)
      assert reported[f'{split}_balanced_error'] == pytest.approx(np.mean(present))
    assert dict(scalars[f'eval/{split}_balanced_error'])[4] == pytest.approx(np.mean(present))
    for name, error in class_errors.items():
      tag = f'class_error/{split}/{name.replace("/", "_").replace(" ", "_")}'
      assert (tag in scalars) == (error is not None)
      if error is not None:
        assert dict(scalars[tag])[4] == pytest.approx(error)
  assert 'confusion/test' in _image_tags(os.path.join(loop.model_dir, 'eval'))


def _image_tags(directory):
  """The tags of the image summaries in a directory's event files."""
  tags = set()
  for name in os.listdir(directory):
    for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
      for value in event.summary.value:
        if tf.make_ndarray(value.tensor).ndim:
          tags.add(value.tag)
  return tags


def test_the_finished_runs_confusion_matrices_are_its_critics_answers(finished_run):
  """End to end: the last step's test confusion matrix in metrics.json is NumPy's count of the
  restored last critic's answers, and the best step's that of the exported classifier."""
  from tf_ipmssl.data import pipelines  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.serving import runtimes  # pylint: disable=g-import-not-at-top
  data_dir, model_dir, metrics = finished_run
  data = _ssl_data(data_dir)
  labels = np.asarray(data.test_labels)
  critic, _ = runs.restore_run(model_dir).restore_critic('latest')
  last = np.argmax(critic.classify(pipelines.to_model_input(tf.constant(data.test_images)),
                                   training=False).numpy(), axis=-1)
  best = runtimes.open_classifier(os.path.join(model_dir, 'export'))(data.test_images)['labels']
  for part, predicted in (('final', last), ('best', best)):
    expected = np.zeros([10, 10], np.int64)
    np.add.at(expected, (labels, predicted), 1)
    np.testing.assert_array_equal(metrics[part]['test_confusion'], expected)
    assert metrics[part]['test_error'] == pytest.approx(_percent_wrong(predicted, labels))
