"""build_ssl_data: the gin-configurable boundary between data and trainer."""

import gin
import numpy as np
import pytest

from tests import fixtures
from tf_ipmssl import errors
from tf_ipmssl import configurables
from tf_ipmssl.data import splits
from tf_ipmssl.data import ssl_data


pytestmark = pytest.mark.usefixtures('no_ambient_data')


@pytest.fixture(scope='module')
def cifar_dir(tmp_path_factory):
  directory = tmp_path_factory.mktemp('cifar')
  arrays = fixtures.make_fake_dataset(str(directory), 'cifar10', num_train=300,
                                      num_test=50)
  return str(directory), arrays


def test_arrays_follow_the_split(cifar_dir):
  directory, (train_x, train_y, test_x, test_y) = cifar_dir
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('cifar10', source='local',
                                                       data_dir=directory, num_labeled=40,
                                                       validation_size=60, split_seed=4))
  assert data.name == 'cifar10' and data.num_classes == 10
  assert data.image_shape == (32, 32, 3)
  assert data.source == f'local:{directory}/cifar-10-batches-py'
  split = data.splits
  np.testing.assert_array_equal(data.labeled_images, train_x[split.labeled])
  np.testing.assert_array_equal(data.labeled_labels, train_y[split.labeled])
  np.testing.assert_array_equal(data.unlabeled_images, train_x[split.unlabeled])
  np.testing.assert_array_equal(data.validation_images, train_x[split.validation])
  np.testing.assert_array_equal(data.validation_labels, train_y[split.validation])
  np.testing.assert_array_equal(data.test_images, test_x)
  np.testing.assert_array_equal(data.test_labels, test_y)
  np.testing.assert_array_equal(np.bincount(data.labeled_labels), [4] * 10)
  assert len(data.unlabeled_images) == 240 and len(data.validation_labels) == 60
  assert data.labeled_labels.dtype == np.int64 and data.labeled_images.dtype == np.uint8


def test_all_labels(cifar_dir):
  directory, _ = cifar_dir
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('cifar10', data_dir=directory,
                                                       num_labeled=None, validation_size=100))
  assert len(data.labeled_labels) == 200
  np.testing.assert_array_equal(data.labeled_images, data.unlabeled_images)


def test_max_examples_take_a_balanced_subset(cifar_dir):
  directory, (train_x, train_y, test_x, test_y) = cifar_dir
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('cifar10', data_dir=directory,
                                                       num_labeled=20, validation_size=20,
                                                       max_train_examples=100,
                                                       max_test_examples=30))
  assert len(data.unlabeled_images) + len(data.validation_images) == 100
  assert len(data.test_labels) == 30
  np.testing.assert_array_equal(np.bincount(data.test_labels), [3] * 10)
  # Every kept test image is one of the originals, with its label.
  for image, label in zip(data.test_images, data.test_labels):
    matches = np.flatnonzero((test_x == image).all(axis=(1, 2, 3)))
    assert len(matches) == 1 and test_y[matches[0]] == label
  assert '(subset: 100 train, 30 test examples)' in data.source
  # The splits index the subset, and the subset does not depend on the split seed.
  subset = splits.subset_indices(train_y, 100, ssl_data.SUBSET_SEED)
  other = ssl_data.build_ssl_data(ssl_data.BuildSslData('cifar10', data_dir=directory,
                                                        num_labeled=20, validation_size=20,
                                                        max_train_examples=100,
                                                        max_test_examples=30, split_seed=9))
  for built in (data, other):
    np.testing.assert_array_equal(built.unlabeled_images,
                                  train_x[subset][built.splits.unlabeled])
    np.testing.assert_array_equal(built.labeled_labels,
                                  train_y[subset][built.splits.labeled])
  assert not np.array_equal(data.splits.labeled, other.splits.labeled)


def test_gin_bindings_are_the_builders_settings(tmp_path):
  """gin is read into the settings (at a program's boundary); the builder itself reads none."""
  fixtures.make_fake_dataset(str(tmp_path), 'fashion_mnist', num_train=60, num_test=20)
  gin.clear_config()
  try:
    gin.parse_config([
        "build_ssl_data.dataset = 'fashion_mnist'",
        f"build_ssl_data.data_dir = '{tmp_path}'",
        'build_ssl_data.num_labeled = 10',
        'build_ssl_data.validation_size = 10',
    ])
    settings = configurables.bound(ssl_data.GROUP)
    with pytest.raises(errors.ConfigError, match='bind build_ssl_data.dataset'):
      ssl_data.build_ssl_data(ssl_data.BuildSslData())
  finally:
    gin.clear_config()
  assert settings['split_seed'] == 0  # The builder's default.
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData(**settings))
  assert data.image_shape == (28, 28, 1)
  assert data.labeled_images.shape == (10, 28, 28, 1)
  assert len(data.validation_labels) == 10 and len(data.unlabeled_images) == 50


@pytest.mark.parametrize('kwargs, error, fragment', [
    (dict(dataset='imagenet'), errors.ConfigError, 'valid names'),
    (dict(max_train_examples=0), errors.ConfigError, 'max_train_examples=0 must be'),
    (dict(max_test_examples=2.5), errors.ConfigError, 'max_test_examples=2.5 must be'),
    (dict(num_labeled=45), errors.SplitError, 'not divisible'),
    (dict(validation_size=300), errors.SplitError, 'must be smaller than the 300'),
    (dict(max_train_examples=50, validation_size=50), errors.SplitError,
     'max_train_examples=50'),
    (dict(num_labeled=400), errors.SplitError, 'lower num_labeled'),
])
def test_bad_requests_raise_user_errors(cifar_dir, kwargs, error, fragment):
  args = dict(dataset='cifar10', data_dir=cifar_dir[0], num_labeled=40,
              validation_size=50)
  args.update(kwargs)
  with pytest.raises(error) as e:
    ssl_data.build_ssl_data(ssl_data.BuildSslData(**args))
  assert fragment in str(e.value)
  assert isinstance(e.value, errors.UserError)
