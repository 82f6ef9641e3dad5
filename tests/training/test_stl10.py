"""bin/train on STL-10 (its binary files, tiny): the example gin file trains at 96 pixels on
fold 0's labels, with the unlabeled split in the unlabeled stream."""
import json
import os

from tests import fixtures
from tests.training import runs

EXAMPLE = str(runs.REPO_ROOT / 'gin' / 'stl10_fisher_kplus1.gin')


def test_the_stl10_example_trains_at_96_pixels_on_a_fold(tmp_path):
  data_dir = tmp_path / 'data'
  fixtures.make_fake_dataset(str(data_dir), 'stl10', num_train=60, num_test=10)
  fold = fixtures.fake_stl10_folds(60)[0]
  model_dir = str(tmp_path / 'run')
  # The example's dataset, fold, labels and constraint; tiny networks, 2 steps.
  bindings = runs.tiny_bindings(data_dir, 'stl10', **{
      'build_ssl_data.num_labeled': None, 'build_ssl_data.validation_size': 10,
      'train.steps': 2, 'train.export_classifier': False})
  bindings = [b for b in bindings if not b.startswith(('build_ssl_data.dataset',
                                                       'ssl.constraints'))]
  result = runs.run_train(model_dir, bindings, gin_files=(EXAMPLE,))
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
  # Fold 0 labeled; train minus validation, then the 60 unlabeled images, unlabeled.
  assert (f'Training ssl on stl10 (local:{data_dir / "stl10_binary"}): {len(fold)} labeled, '
          f'{60 - 10 + 60} unlabeled, 10 validation, 10 test;') in result.stdout
  with open(os.path.join(model_dir, 'dataset.json')) as f:
    dataset = json.load(f)
  assert dataset['name'] == 'stl10' and dataset['image_shape'] == [96, 96, 3]
  assert dataset['resize'] is None  # At its own size: nothing resized.
  with open(os.path.join(model_dir, 'run_config.json')) as f:
    data_settings = json.load(f)['build_ssl_data']
  assert data_settings['stl10_fold'] == 0 and data_settings['image_size'] == 96
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  assert metrics['finished'] and metrics['step'] == 2
  assert metrics['final']['test_error'] is not None
  assert runs.restore_run(model_dir).critic.image_size == 96


def test_the_stl10_example_trains_on_tfds_mock_data(tmp_path):
  """The same example from TFDS (its own mock data), in one process through the Python API:
  no folds there, so the whole train split is labeled."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  from tf_ipmssl import api  # pylint: disable=g-import-not-at-top
  bindings = runs.tiny_bindings(tmp_path / 'tfds', 'stl10', **{
      'build_ssl_data.source': "'tfds'", 'build_ssl_data.stl10_fold': None,
      'build_ssl_data.num_labeled': None, 'build_ssl_data.validation_size': 10,
      'train.steps': 2, 'train.export_classifier': False})
  bindings = [b for b in bindings if not b.startswith(('build_ssl_data.dataset',
                                                       'ssl.constraints'))]
  model_dir = str(tmp_path / 'run')
  with tfds.testing.mock_data(num_examples=40):
    result = api.train(model_dir, [EXAMPLE], bindings)
  assert result.steps == 2 and result.metrics['finished']
  assert result.last_test_error is not None
  with open(os.path.join(model_dir, 'dataset.json')) as f:
    dataset = json.load(f)
  assert dataset['name'] == 'stl10' and dataset['image_shape'] == [96, 96, 3]
  with open(os.path.join(model_dir, 'run_config.json')) as f:
    data_settings = json.load(f)['build_ssl_data']
  assert data_settings['source'] == 'tfds' and data_settings['stl10_fold'] is None
