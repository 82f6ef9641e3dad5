"""train.validation_subset_per_class and train.test_every_evaluation: a small validation split
read inside the large one, and the test error at every evaluation, from the same run.

Against independent computations: the subset is the first n images of each class in the
split's order (NumPy on known labels); on a real tiny run (layer norm, so that images score
apart) the subset error and the test error at every step are that step's restored critic's
mistakes counted in NumPy, a subset of every image of each class is the validation split
itself (the same error at every step), and a run with both options trains the same weights
as one without them."""
import json
import os
import types

import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs
from tf_ipmssl.run_dir import event_files
from tf_ipmssl.training import loop

STEPS = 4


def test_the_subset_is_the_first_images_of_each_class_in_the_splits_order():
  labels = np.array([2, 0, 2, 1, 0, 2, 0, 1, 2])
  images = np.arange(len(labels))[:, None, None, None] * np.ones([1, 2, 2, 1], np.uint8)
  data = types.SimpleNamespace(validation_images=images, validation_labels=labels,
                               num_classes=4)  # Class 3 has no image.
  chosen_images, chosen_labels = loop.validation_subset(data, 2)
  assert chosen_images[:, 0, 0, 0].tolist() == [0, 1, 2, 3, 4, 7]
  assert chosen_labels.tolist() == [2, 0, 2, 1, 0, 1]
  assert loop.validation_subset(data, 1)[1].tolist() == [2, 0, 1]
  assert loop.validation_subset(data, None) is None
  every = loop.validation_subset(data, 100)
  assert every[1].tolist() == labels.tolist()


def _train(directory, data_dir, **overrides):
  model_dir = str(directory / 'model')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{
      'train.steps': STEPS, 'train.eval_every': 1, 'train.checkpoint_every': STEPS,
      'train.export_classifier': False,
      'build_critic.normalization': "'layer_norm_singleton_per_channel'", **overrides}))
  assert result.returncode == 0, result.stdout + result.stderr
  return model_dir


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  data_dir = runs.make_data(tmp_path_factory.mktemp('data'))
  return data_dir, {
      'plain': _train(tmp_path_factory.mktemp('plain'), data_dir),
      'subset': _train(tmp_path_factory.mktemp('subset'), data_dir, **{
          'train.validation_subset_per_class': 2, 'train.test_every_evaluation': True,
          'train.checkpoint_every': 1, 'train.keep_checkpoints': STEPS}),
      'whole': _train(tmp_path_factory.mktemp('whole'), data_dir, **{
          'train.validation_subset_per_class': 1000})}


def test_the_options_change_no_trained_number(trained):
  _, dirs = trained
  prefixes = {name: tf.train.latest_checkpoint(os.path.join(d, 'checkpoints'))
              for name, d in dirs.items()}
  plain = runs.checkpoint_values(prefixes['plain'])
  for name in ('subset', 'whole'):
    other = runs.checkpoint_values(prefixes[name])
    assert other.keys() == plain.keys()
    for key, value in plain.items():
      if key.startswith('state/latest') and 'test' in key or key.startswith('save_counter'):
        continue  # The latest evaluation's test error (computed at more steps); saves made.
      np.testing.assert_array_equal(other[key], value, err_msg=key)
  with open(os.path.join(dirs['plain'], 'metrics.json')) as f:
    plain_metrics = json.load(f)
  with open(os.path.join(dirs['subset'], 'metrics.json')) as f:
    subset_metrics = json.load(f)
  assert subset_metrics['best'] == plain_metrics['best']
  assert subset_metrics['final'] == plain_metrics['final']


def test_test_error_at_every_evaluation_and_the_subset_error_as_counted(trained):
  from tf_ipmssl.data import pipelines  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import ssl_data  # pylint: disable=g-import-not-at-top
  data_dir, dirs = trained
  plain = event_files.read_eval_curves(dirs['plain'])
  curves = event_files.read_eval_curves(dirs['subset'])
  assert sorted(curves['eval/test_error']) == list(range(1, STEPS + 1))
  assert 'eval/validation_subset_error' not in plain
  assert sorted(curves['eval/validation_subset_error']) == list(range(1, STEPS + 1))
  # Where both computed it, the test error is the same number.
  for step, error in plain['eval/test_error'].items():
    assert curves['eval/test_error'][step] == error
  # At every step, both errors are that step's critic's mistakes: on the test images, and on
  # the first two validation images of each class (in the split's order), counted in NumPy.
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData(
      dataset='fashion_mnist', source='local', data_dir=data_dir, num_labeled=20,
      validation_size=20))
  labels = np.asarray(data.validation_labels)
  first = sorted(i for c in np.unique(labels) for i in np.flatnonzero(labels == c)[:2])
  assert first != list(range(len(first)))  # Not merely the split's first images.
  run = runs.restore_run(dirs['subset'])

  def predicted(images):  # The restored step's classes.
    logits = run.evaluated_critic.classify(pipelines.to_model_input(tf.constant(images)),
                                           training=False)
    return np.argmax(logits.numpy(), axis=-1)
  predicted_classes = set()
  for step in range(1, STEPS + 1):
    run.restore(os.path.join(dirs['subset'], 'checkpoints', f'ckpt-{step}'))
    subset = predicted(data.validation_images[first])
    predicted_classes |= set(subset.tolist())
    wrong = np.count_nonzero(subset != labels[first])
    assert curves['eval/validation_subset_error'][step] == pytest.approx(
        100.0 * wrong / len(first), abs=1e-4), step
    test_wrong = np.count_nonzero(predicted(data.test_images) != np.asarray(data.test_labels))
    assert curves['eval/test_error'][step] == pytest.approx(
        100.0 * test_wrong / len(data.test_labels), abs=1e-4), step
  # The critic tells images apart (not one class for all), so a wrong subset would show.
  assert len(predicted_classes) > 1


def test_a_subset_of_every_image_is_the_validation_split(trained):
  _, dirs = trained
  curves = event_files.read_eval_curves(dirs['whole'])
  assert curves['eval/validation_subset_error'] == curves['eval/validation_error']


def test_a_subset_without_a_validation_split_is_refused_in_one_line(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  result = runs.run_train(str(tmp_path / 'model'), runs.tiny_bindings(data_dir, **{
      'build_ssl_data.validation_size': 0, 'train.validation_subset_per_class': 10}))
  assert result.returncode != 0
  assert result.stderr.strip().splitlines()[-1] == (
      'error: train.validation_subset_per_class needs a validation split '
      '(build_ssl_data.validation_size > 0)')
  assert not os.path.exists(str(tmp_path / 'model' / 'checkpoints'))
