"""Data at the networks' input size (build_ssl_data.image_size, docs/algorithm.md#image-sizes):
a dataset kept as stored at its own size and fitted by the image folders' rule at another, an
image folder read at the bound size, the model input of each size."""
import numpy as np
import pytest
import tensorflow as tf

from tests import fixtures
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import image_rules
from tf_ipmssl.data import pipelines
from tf_ipmssl.data import ssl_data

pytestmark = pytest.mark.usefixtures('no_ambient_data')


@pytest.fixture(scope='module')
def fashion_dir(tmp_path_factory):
  directory = tmp_path_factory.mktemp('fashion')
  arrays = fixtures.make_fake_dataset(str(directory), 'fashion_mnist', num_train=60,
                                      num_test=20)
  return str(directory), arrays


def _build(directory, **kwargs):
  return ssl_data.build_ssl_data(ssl_data.BuildSslData('fashion_mnist', source='local',
                                                       data_dir=directory, num_labeled=10,
                                                       validation_size=10, **kwargs))


def test_the_default_size_keeps_the_images_as_stored(fashion_dir):
  directory, (train_x, _, test_x, _) = fashion_dir
  for data in (_build(directory), _build(directory, image_size=32)):
    assert data.image_shape == (28, 28, 1) and not data.resizes_images
    np.testing.assert_array_equal(data.test_images, test_x)
  assert dataset_specs.default_image_size('fashion_mnist') == 32
  assert dataset_specs.default_image_size(dataset_specs.IMAGE_FOLDER) == 32


@pytest.mark.parametrize('size', [64, 96])
def test_another_size_fits_every_image_by_the_folders_rule(fashion_dir, size):
  directory, (train_x, train_y, test_x, _) = fashion_dir
  data = _build(directory, image_size=size)
  at_32 = _build(directory)
  assert data.image_shape == (size, size, 1) and data.resizes_images
  np.testing.assert_array_equal(data.test_images, image_rules.fit_images(test_x, size))
  # The same examples in the same splits, each fitted.
  np.testing.assert_array_equal(data.labeled_labels, at_32.labeled_labels)
  np.testing.assert_array_equal(data.labeled_images,
                                image_rules.fit_images(at_32.labeled_images, size))
  assert data.unlabeled_images.shape == (len(at_32.unlabeled_images), size, size, 1)
  assert pipelines.to_model_input(data.labeled_images[:2]).shape == (2, size, size, 1)


def test_fitting_in_chunks_equals_fitting_at_once(fashion_dir, monkeypatch):
  directory, (_, _, test_x, _) = fashion_dir
  monkeypatch.setattr(ssl_data, 'FIT_CHUNK', 7)
  np.testing.assert_array_equal(_build(directory, image_size=64).test_images,
                                image_rules.fit_images(test_x, 64))


@pytest.mark.parametrize('size', [0, 48, 128, 64.0, '64', True])
def test_a_bad_size_is_one_config_error_naming_the_sizes(fashion_dir, size):
  with pytest.raises(errors.ConfigError,
                     match=r'build_ssl_data.image_size = .* use one of 32, 64, 96'):
    _build(fashion_dir[0], image_size=size)


def test_an_image_folder_is_read_at_the_bound_size(tmp_path):
  rng = np.random.default_rng(0)
  for name in ('a', 'b'):
    for i in range(2):
      path = tmp_path / 'labeled' / name / f'{i}.png'
      path.parent.mkdir(parents=True, exist_ok=True)
      image = rng.integers(0, 256, [30 + 10 * i, 50, 3], dtype=np.uint8)
      tf.io.write_file(str(path), tf.io.encode_png(image))
  (tmp_path / 'unlabeled').mkdir()
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('image_folder', data_dir=str(tmp_path),
                                                       num_labeled=None, validation_size=0,
                                                       image_size=64))
  assert data.image_shape == (64, 64, 3) and data.resizes_images
  first = tf.io.decode_png(tf.io.read_file(str(tmp_path / 'labeled' / 'a' / '0.png')))
  np.testing.assert_array_equal(data.labeled_images[0], image_rules.fit_images(first, 64))
  assert image_rules.resize_rule(64) == (
      'short side to 64 (bilinear, antialiased), centre 64x64 crop')


@pytest.mark.parametrize('size', dataset_specs.IMAGE_SIZES)
def test_model_input_of_each_size_is_only_scaled(size):
  images = np.random.default_rng(size).integers(0, 256, [2, size, size, 3], dtype=np.uint8)
  np.testing.assert_array_equal(pipelines.to_model_input(images),
                                images.astype(np.float32) / 127.5 - 1.0)
