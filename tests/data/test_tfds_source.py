"""Loading through TensorFlow Datasets, with `tfds.testing.mock_data` (no download)."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from tests import fixtures
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets


pytestmark = pytest.mark.usefixtures('no_ambient_data')


@pytest.mark.parametrize('name', datasets.DATASETS)
def test_mocked_tfds_dataset(tmp_path, name):
  with tfds.testing.mock_data(num_examples=12):
    data = datasets.load_dataset(name, source='tfds', data_dir=str(tmp_path))
  assert data.source.startswith(f'tfds:{dataset_specs.REGISTRY[name].tfds_name} ')
  # (mock_data reads TFDS's bundled metadata, overriding data_dir: see the test below.)
  for images, labels in ((data.train_images, data.train_labels),
                         (data.test_images, data.test_labels)):
    assert images.shape == (12,) + dataset_specs.REGISTRY[name].image_shape
    assert images.dtype == np.uint8 and labels.dtype == np.int64
    assert labels.shape == (12,)
    assert 0 <= labels.min() and labels.max() < 10
  assert data.image_shape == dataset_specs.REGISTRY[name].image_shape
  assert data.num_classes == 10
  assert data.train_images.std() > 0  # real pixels, not padding


def test_mocked_tfds_svhn_extra_split(tmp_path):
  with tfds.testing.mock_data(num_examples=5):
    data = datasets.load_dataset('svhn', source='tfds', data_dir=str(tmp_path),
                                 include_extra=True)
  assert '(train+extra/test)' in data.source
  assert data.train_images.shape[1:] == (32, 32, 3)


def test_auto_falls_back_to_tfds_and_prefers_local(tmp_path):
  with tfds.testing.mock_data(num_examples=4):
    data = datasets.load_dataset('cifar10', data_dir=str(tmp_path))
    assert data.source.startswith('tfds:cifar10')
    arrays = fixtures.make_fake_dataset(str(tmp_path), 'cifar10', num_train=20,
                                        num_test=10)
    data = datasets.load_dataset('cifar10', data_dir=str(tmp_path))
  assert data.source.startswith('local:')
  np.testing.assert_array_equal(data.train_images, arrays[0])


def test_unprepared_tfds_dataset_is_not_found(tmp_path):
  with pytest.raises(errors.DatasetNotFoundError) as e:
    datasets.load_dataset('fashion_mnist', source='tfds', data_dir=str(tmp_path))
  message = str(e.value)
  assert f'fashion_mnist in {tmp_path / "fashion_mnist"}' in message
  assert 'not prepared (download=False)' in message
  assert f'tfds build fashion_mnist --data_dir={tmp_path}' in message
  assert 'Looked for the original files' not in message  # source='tfds' only
  assert not (tmp_path / 'fashion_mnist').exists()  # nothing written
