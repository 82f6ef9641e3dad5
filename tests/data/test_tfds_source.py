"""Loading through TensorFlow Datasets, with `tfds.testing.mock_data` (no download)."""

import os
import tempfile

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
  with tfds.testing.mock_data(num_examples=12):  # The same examples, read another way.
    for split, images, labels in (('train', data.train_images, data.train_labels),
                                  ('test', data.test_images, data.test_labels)):
      fixtures.assert_tfds_examples(dataset_specs.REGISTRY[name].tfds_name, split, tmp_path,
                                    images, labels)


def test_mocked_tfds_svhn_extra_split(tmp_path, monkeypatch):
  """include_extra reads TFDS's split 'train+extra' for training (TFDS concatenates train
  and extra; mock_data makes num_examples for any split string, so the splits asked for are
  what is checked here) and 'test' for testing; without it, 'train' and 'test'."""
  asked = []
  as_dataset = tfds.core.DatasetBuilder.as_dataset

  def spy(self, *args, split=None, **kwargs):
    asked.append(split)
    return as_dataset(self, *args, split=split, **kwargs)

  monkeypatch.setattr(tfds.core.DatasetBuilder, 'as_dataset', spy)
  with tfds.testing.mock_data(num_examples=5):
    plain = datasets.load_dataset('svhn', source='tfds', data_dir=str(tmp_path))
    data = datasets.load_dataset('svhn', source='tfds', data_dir=str(tmp_path),
                                 include_extra=True)
  assert asked == ['train', 'test', 'train+extra', 'test']
  assert '(train+extra/test)' in data.source and '(train/test)' in plain.source
  assert data.train_images.shape == (5, 32, 32, 3) and data.train_labels.shape == (5,)


def test_auto_falls_back_to_tfds_and_prefers_local(tmp_path):
  with tfds.testing.mock_data(num_examples=4):
    data = datasets.load_dataset('cifar10', data_dir=str(tmp_path))
    assert data.source.startswith('tfds:cifar10')
    arrays = fixtures.make_fake_dataset(str(tmp_path), 'cifar10', num_train=20,
                                        num_test=10)
    data = datasets.load_dataset('cifar10', data_dir=str(tmp_path))
  assert data.source.startswith('local:')
  np.testing.assert_array_equal(data.train_images, arrays[0])


def test_unprepared_tfds_dataset_is_not_found(tmp_path, scratch_tempdir):
  with pytest.raises(errors.DatasetNotFoundError) as e:
    datasets.load_dataset('fashion_mnist', source='tfds', data_dir=str(tmp_path))
  # TFDS's temporary folder for an unprepared dataset's metadata is not left behind.
  assert not os.listdir(scratch_tempdir) and tempfile.gettempdir() == str(scratch_tempdir)
  message = str(e.value)
  assert f'fashion_mnist in {tmp_path / "fashion_mnist"}' in message
  assert 'not prepared (download=False)' in message
  assert f'tfds build fashion_mnist --data_dir={tmp_path}' in message
  assert 'Looked for the original files' not in message  # source='tfds' only
  assert not (tmp_path / 'fashion_mnist').exists()  # nothing written
