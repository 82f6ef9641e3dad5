"""Readers of the original dataset files, and the local search of `load_dataset`."""
import dataclasses
import gzip
import os
import pickle

import numpy as np
import pytest
import scipy.io

from tests import fixtures
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets
from tf_ipmssl.data import local_files

REAL_FASHION_MNIST = '/usr/share/datasets/fashion-mnist'


pytestmark = pytest.mark.usefixtures('no_ambient_data')


def _assert_same(expected, found):
  assert len(expected) == len(found) == 4
  for want, got in zip(expected, found):
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _arrays(name, num_train=23, num_test=7, seed=3):
  """Random arrays in the dataset's layout, labels covering every class."""
  rng = np.random.default_rng(seed)
  shape = dataset_specs.REGISTRY[name].image_shape
  train_labels = np.arange(num_train, dtype=np.int64) % 10
  test_labels = rng.integers(0, 10, num_test).astype(np.int64)
  return (rng.integers(0, 256, (num_train,) + shape, dtype=np.uint8), train_labels,
          rng.integers(0, 256, (num_test,) + shape, dtype=np.uint8), test_labels)


# --- CIFAR-10 -----------------------------------------------------------------------


def test_cifar10_batches_round_trip(tmp_path):
  arrays = _arrays('cifar10')
  batch_dir = fixtures.write_cifar10_batches(str(tmp_path), *arrays)
  assert sorted(os.listdir(batch_dir)) == sorted(
      ['batches.meta', 'test_batch'] + [f'data_batch_{i}' for i in range(1, 6)])
  _assert_same(arrays, local_files.read_cifar10_dir(batch_dir))
  # Channel-major storage: the first 1024 bytes of a row are the red plane.
  with open(os.path.join(batch_dir, 'data_batch_1'), 'rb') as f:
    raw = pickle.load(f, encoding='bytes')
  np.testing.assert_array_equal(raw[b'data'][0, :1024], arrays[0][0, :, :, 0].reshape(-1))


def test_cifar10_tarball_round_trip(tmp_path):
  arrays = _arrays('cifar10')
  tarball = fixtures.write_cifar10_tarball(
      str(tmp_path / local_files.CIFAR10_TARBALL), *arrays)
  _assert_same(arrays, local_files.read_cifar10_tarball(tarball))
  loaded = datasets.load_dataset('cifar10', source='local', data_dir=str(tmp_path))
  assert loaded.source == f'local:{tarball}'
  assert not (tmp_path / local_files.CIFAR10_DIRNAME).exists()  # nothing extracted


def test_cifar10_batch_with_str_keys_is_accepted(tmp_path):
  images = np.arange(2 * 3072, dtype=np.uint8).reshape(2, 3072) % 251
  path = tmp_path / 'batch'
  path.write_bytes(pickle.dumps({'data': images, 'labels': [4, 9]}))
  with open(path, 'rb') as f:
    got_images, got_labels = local_files.read_cifar10_batch(f, str(path))
  np.testing.assert_array_equal(got_images[1, 0, 0], images[1, [0, 1024, 2048]])
  np.testing.assert_array_equal(got_labels, [4, 9])


@pytest.mark.parametrize('content, fragment', [
    (b'not a pickle at all', 'cannot unpickle'),
    (pickle.dumps(os.system, protocol=2), 'unexpected object'),
    (pickle.dumps({b'data': np.zeros((2, 100), np.uint8), b'labels': [0, 1]}),
     'expected uint8 [N, 3072]'),
    (pickle.dumps({b'data': np.zeros((2, 3072), np.uint8), b'labels': [0, 10]}),
     'labels span [0, 10]'),
    (pickle.dumps({b'data': np.zeros((2, 3072), np.uint8), b'labels': [0]}),
     '2 images but 1 labels'),
])
def test_corrupt_cifar10_batch_raises(tmp_path, content, fragment):
  path = tmp_path / 'data_batch_1'
  path.write_bytes(content)
  with open(path, 'rb') as f, pytest.raises(local_files.CorruptDatasetFileError) as e:
    local_files.read_cifar10_batch(f, str(path))
  assert fragment in str(e.value)
  assert str(path) in str(e.value)


def test_corrupt_cifar10_tarball_raises(tmp_path):
  path = tmp_path / local_files.CIFAR10_TARBALL
  path.write_bytes(b'\x1f\x8b garbage')
  with pytest.raises(local_files.CorruptDatasetFileError, match='tar archive'):
    local_files.read_cifar10_tarball(str(path))


# --- SVHN ---------------------------------------------------------------------------


def test_svhn_mat_round_trip_maps_10_to_0(tmp_path):
  images, labels, _, _ = _arrays('svhn')
  path = fixtures.write_svhn_mat(str(tmp_path / 'train_32x32.mat'), images, labels)
  raw = scipy.io.loadmat(path)
  assert raw['X'].shape == (32, 32, 3, len(images))
  assert raw['y'].shape == (len(images), 1)
  assert set(raw['y'].ravel()) == set(range(1, 11))  # digit 0 stored as 10
  np.testing.assert_array_equal(raw['X'][:, :, :, 5], images[5])
  got_images, got_labels = local_files.read_svhn_mat(path)
  np.testing.assert_array_equal(got_images, images)
  np.testing.assert_array_equal(got_labels, labels)
  assert got_labels.dtype == np.int64 and got_labels.min() == 0


def test_svhn_include_extra_appends_extra(tmp_path):
  train_x, train_y, test_x, test_y = _arrays('svhn', seed=1)
  extra_x, extra_y, _, _ = _arrays('svhn', num_train=11, seed=2)
  svhn_dir = tmp_path / 'svhn'
  fixtures.write_svhn_mat(str(svhn_dir / 'train_32x32.mat'), train_x, train_y)
  fixtures.write_svhn_mat(str(svhn_dir / 'test_32x32.mat'), test_x, test_y)
  with pytest.raises(errors.DatasetNotFoundError, match='extra_32x32.mat'):
    datasets.load_dataset('svhn', source='local', data_dir=str(tmp_path),
                          include_extra=True)
  fixtures.write_svhn_mat(str(svhn_dir / 'extra_32x32.mat'), extra_x, extra_y)
  loaded = datasets.load_dataset('svhn', source='local', data_dir=str(tmp_path),
                                 include_extra=True)
  _assert_same((np.concatenate([train_x, extra_x]), np.concatenate([train_y, extra_y]),
                test_x, test_y),
               (loaded.train_images, loaded.train_labels, loaded.test_images,
                loaded.test_labels))
  plain = datasets.load_dataset('svhn', source='local', data_dir=str(tmp_path))
  assert len(plain.train_labels) == len(train_y)


@pytest.mark.parametrize('mat, fragment', [
    (None, 'MATLAB'),
    ({'X': np.zeros((28, 28, 1, 2), np.uint8), 'y': np.ones((2, 1))}, '[32, 32, 3, N]'),
    ({'X': np.zeros((32, 32, 3, 2), np.uint8), 'y': np.ones((3, 1))}, '2 images but 3'),
    ({'X': np.zeros((32, 32, 3, 2), np.uint8), 'y': np.full((2, 1), 11)}, 'labels span'),
    ({'Z': np.zeros(3)}, 'lacks the variables X and y'),
])
def test_corrupt_svhn_mat_raises(tmp_path, mat, fragment):
  path = tmp_path / 'train_32x32.mat'
  if mat is None:
    path.write_bytes(b'MATLAB 5.0 MAT-file, but truncated')
  else:
    scipy.io.savemat(str(path), mat)
  with pytest.raises(local_files.CorruptDatasetFileError) as e:
    local_files.read_svhn_mat(str(path))
  assert fragment in str(e.value)


# --- Fashion-MNIST ------------------------------------------------------------------


def test_idx_gz_round_trip(tmp_path):
  arrays = _arrays('fashion_mnist')
  fixtures.write_idx_gz(str(tmp_path), *arrays)
  with gzip.open(tmp_path / 'train-images-idx3-ubyte.gz', 'rb') as f:
    assert f.read(16) == bytes.fromhex('00000803') + (23).to_bytes(4, 'big') + \
        (28).to_bytes(4, 'big') * 2
  with gzip.open(tmp_path / 't10k-labels-idx1-ubyte.gz', 'rb') as f:
    assert f.read(8) == bytes.fromhex('00000801') + (7).to_bytes(4, 'big')
  _assert_same(arrays, local_files.read_fashion_mnist_dir(str(tmp_path)))


def test_idx_uncompressed_names_are_accepted(tmp_path):
  arrays = _arrays('fashion_mnist')
  fixtures.write_idx_gz(str(tmp_path), *arrays)
  for name in local_files.FASHION_MNIST_FILES:
    with gzip.open(tmp_path / (name + '.gz'), 'rb') as f:
      (tmp_path / name).write_bytes(f.read())
    os.remove(tmp_path / (name + '.gz'))
  loaded = datasets.load_dataset('fashion_mnist', source='local', data_dir=str(tmp_path))
  _assert_same(arrays, (loaded.train_images, loaded.train_labels, loaded.test_images,
                        loaded.test_labels))


@pytest.mark.parametrize('content, fragment', [
    (bytes.fromhex('00000801') + (2).to_bytes(4, 'big') + b'\x01\x02', 'magic number 2049'),
    (bytes.fromhex('00000803') + (2).to_bytes(4, 'big') + (28).to_bytes(4, 'big') * 2 +
     b'\x00' * 100, 'header says'),
    (b'\x00\x00', 'shorter than an IDX header'),
])
def test_corrupt_idx_raises(tmp_path, content, fragment):
  path = str(tmp_path / 'train-images-idx3-ubyte.gz')
  with gzip.open(path, 'wb') as f:
    f.write(content)
  with pytest.raises(local_files.CorruptDatasetFileError) as e:
    local_files.read_idx(path, local_files.IDX_IMAGES_MAGIC)
  assert fragment in str(e.value) and path in str(e.value)


def test_idx_not_gzip_raises(tmp_path):
  path = tmp_path / 'train-labels-idx1-ubyte.gz'
  path.write_bytes(b'plain bytes, no gzip header')
  with pytest.raises(local_files.CorruptDatasetFileError, match='cannot read'):
    local_files.read_idx(str(path), local_files.IDX_LABELS_MAGIC)


@pytest.mark.skipif(not os.path.isdir(REAL_FASHION_MNIST),
                    reason='dataset-fashion-mnist is not installed')
def test_real_fashion_mnist(monkeypatch):
  monkeypatch.setitem(dataset_specs.REGISTRY, 'fashion_mnist', dataclasses.replace(
      dataset_specs.FASHION_MNIST, system_dirs=(REAL_FASHION_MNIST,)))
  data = datasets.load_dataset('fashion_mnist', source='local')
  assert data.source == f'local:{REAL_FASHION_MNIST}'
  assert data.train_images.shape == (60000, 28, 28, 1)
  assert data.test_images.shape == (10000, 28, 28, 1)
  assert data.image_shape == (28, 28, 1) and data.num_classes == 10
  assert data.train_images.dtype == np.uint8 and data.train_labels.dtype == np.int64
  np.testing.assert_array_equal(np.bincount(data.train_labels), [6000] * 10)
  np.testing.assert_array_equal(np.bincount(data.test_labels), [1000] * 10)
  # The first training and test images are ankle boots (label 9), as published.
  assert data.train_labels[0] == 9 and data.test_labels[0] == 9
  # Every byte against a decoding written here: gzip, then the IDX header skipped (16 bytes
  # for images, 8 for labels).
  for part, images, labels in (('train', data.train_images, data.train_labels),
                               ('t10k', data.test_images, data.test_labels)):
    with gzip.open(os.path.join(REAL_FASHION_MNIST, f'{part}-images-idx3-ubyte.gz')) as f:
      raw = np.frombuffer(f.read(), np.uint8, offset=16)
    np.testing.assert_array_equal(images.reshape(-1), raw)
    with gzip.open(os.path.join(REAL_FASHION_MNIST, f'{part}-labels-idx1-ubyte.gz')) as f:
      np.testing.assert_array_equal(labels, np.frombuffer(f.read(), np.uint8, offset=8))
  assert 0 == data.train_images.min() and data.train_images.max() == 255


# --- load_dataset: where it looks ---------------------------------------------------


@pytest.mark.parametrize('name', datasets.DATASETS)
def test_fake_dataset_is_found_in_data_dir(tmp_path, name):
  arrays = fixtures.make_fake_dataset(str(tmp_path), name, num_train=30, num_test=10)
  loaded = datasets.load_dataset(name, source='local', data_dir=str(tmp_path))
  _assert_same(arrays, (loaded.train_images, loaded.train_labels, loaded.test_images,
                        loaded.test_labels))
  assert loaded.name == name and loaded.num_classes == 10
  assert loaded.image_shape == dataset_specs.REGISTRY[name].image_shape
  assert loaded.source == 'local:' + fixtures.fake_dataset_dir(tmp_path, name)


def test_fake_images_depend_on_class():
  images, labels = fixtures.fake_images_and_labels('cifar10', 200)
  np.testing.assert_array_equal(np.bincount(labels), [20] * 10)
  means = np.stack([images[labels == c].mean(0) for c in range(10)]).reshape(10, -1)
  # Nearest class mean classifies every image: the classes are learnable.
  dists = ((images.reshape(200, 1, -1) - means[None]) ** 2).sum(-1)
  assert (dists.argmin(1) == labels).all()


def test_search_order_data_dir_env_cache(tmp_path, monkeypatch):
  data_dir, env_dir = tmp_path / 'data', tmp_path / 'env'
  cache_dir = tmp_path / 'home' / '.cache' / 'tf_ipmssl' / 'fashion_mnist'
  fixtures.write_idx_gz(str(cache_dir), *_arrays('fashion_mnist', seed=1))
  env_arrays = _arrays('fashion_mnist', seed=2)
  fixtures.write_idx_gz(str(env_dir / 'fashion-mnist'), *env_arrays)
  data_arrays = _arrays('fashion_mnist', seed=3)
  fixtures.write_idx_gz(str(data_dir), *data_arrays)

  found = datasets.load_dataset('fashion_mnist', source='local')
  assert found.source == f'local:{cache_dir}'
  monkeypatch.setenv(datasets.DATA_DIR_ENV, str(env_dir))
  found = datasets.load_dataset('fashion_mnist', source='local')
  assert found.source == f'local:{env_dir / "fashion-mnist"}'
  np.testing.assert_array_equal(found.train_images, env_arrays[0])
  found = datasets.load_dataset('fashion_mnist', source='local', data_dir=str(data_dir))
  assert found.source == f'local:{data_dir}'
  np.testing.assert_array_equal(found.test_labels, data_arrays[3])


def test_extracted_cifar10_dir_can_be_given_directly(tmp_path):
  arrays = _arrays('cifar10')
  batch_dir = fixtures.write_cifar10_batches(str(tmp_path / 'cifar10'), *arrays)
  for data_dir in (tmp_path, tmp_path / 'cifar10', batch_dir):
    loaded = datasets.load_dataset('cifar10', source='local', data_dir=str(data_dir))
    assert loaded.source == f'local:{batch_dir}'


@pytest.mark.parametrize('name', datasets.DATASETS)
def test_not_found_lists_every_searched_place(tmp_path, monkeypatch, name):
  data_dir, env_dir = tmp_path / 'data', tmp_path / 'env'
  (data_dir / dataset_specs.REGISTRY[name].subdirs[0]).mkdir(parents=True)  # exists, but empty
  monkeypatch.setenv(datasets.DATA_DIR_ENV, str(env_dir))
  with pytest.raises(errors.DatasetNotFoundError) as e:
    datasets.load_dataset(name, source='local', data_dir=str(data_dir))
  message = str(e.value)
  # A named data_dir is the only place searched: not $TF_IPMSSL_DATA_DIR, the cache or the
  # system's copy.
  searched = [data_dir] + [data_dir / sub for sub in dataset_specs.REGISTRY[name].subdirs]
  for place in searched:
    assert f'  - {place} (' in message
  for place in (env_dir, tmp_path / 'home' / '.cache' / 'tf_ipmssl' / name):
    assert f'  - {place} (' not in message
  assert f'{data_dir / dataset_specs.REGISTRY[name].subdirs[0]} (files missing: ' in message
  assert local_files.expected_files(name) in message
  assert {'cifar10': 'cifar-10-python.tar.gz', 'svhn': 'test_32x32.mat',
          'fashion_mnist': 'apt-get install dataset-fashion-mnist',
          'stl10': 'stl10_binary.tar.gz'}[name] in message
  assert 'TensorFlow Datasets' not in message  # source='local' does not try TFDS


def test_not_found_in_auto_mode_names_tfds_dir(tmp_path):
  with pytest.raises(errors.DatasetNotFoundError) as e:
    datasets.load_dataset('cifar10', data_dir=str(tmp_path))
  message = str(e.value)
  assert f'  - {tmp_path} (no such directory)' not in message  # tmp_path exists
  assert f'  - {tmp_path} (files missing: data_batch_1' in message
  assert str(tmp_path / 'cifar10' / '3.0.2') in message  # TFDS's data_dir
  assert f'tfds build cifar10 --data_dir={tmp_path}' in message
  assert 'download=True' in message


def test_corrupt_local_file_is_not_skipped(tmp_path):
  fixtures.make_fake_dataset(str(tmp_path), 'fashion_mnist', num_train=10, num_test=10)
  (tmp_path / 'fashion_mnist' / 't10k-labels-idx1-ubyte.gz').write_bytes(b'junk')
  with pytest.raises(local_files.CorruptDatasetFileError, match='t10k-labels'):
    datasets.load_dataset('fashion_mnist', data_dir=str(tmp_path))


@pytest.mark.parametrize('kwargs, fragment', [
    (dict(name='mnist'), "valid names: cifar10, svhn, fashion_mnist"),
    (dict(name='cifar10', source='web'), 'valid sources: auto, local, tfds'),
    (dict(name='cifar10', include_extra=True), 'applies to svhn only'),
])
def test_bad_requests_raise_config_error(kwargs, fragment):
  with pytest.raises(errors.ConfigError) as e:
    datasets.load_dataset(**kwargs)
  assert fragment in str(e.value)
