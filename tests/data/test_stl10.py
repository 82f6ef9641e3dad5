"""STL-10: its binary files (written here byte by byte in the published layout), its TFDS
copy (TFDS's mock data), its folds and its unlabeled split in build_ssl_data."""
import os

import numpy as np
import pytest
import tensorflow_datasets as tfds

from tests import fixtures
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets
from tf_ipmssl.data import image_rules
from tf_ipmssl.data import local_files
from tf_ipmssl.data import ssl_data

pytestmark = pytest.mark.usefixtures('no_ambient_data')

SIZE = 96
NUM_TRAIN, NUM_TEST, NUM_UNLABELED = 12, 6, 8
# Fold k: train images k, k + 1 and k + 5 (mod 12); the folds overlap, as the real ones do.
FOLDS = [sorted({k % NUM_TRAIN, (k + 1) % NUM_TRAIN, (k + 5) % NUM_TRAIN}) for k in range(10)]
# Bytes 1..10 of train_y.bin: train image i has class (i % 10) + 1 in the file.
TRAIN_BYTES = [i % 10 + 1 for i in range(NUM_TRAIN)]
TEST_BYTES = [10, 1, 2, 3, 9, 10]


def _pixel(image, channel, row, col, offset):
  """The value of a pixel of image `image` of a file whose images start at `offset`. Row and
  column weigh differently, so a transposed image differs from the right one."""
  return (offset + 37 * image + 85 * channel + 2 * row + 5 * col) % 256


def _file_bytes(count, offset):
  """The bytes of an STL-10 images file of `count` images, in the published order: for each
  image, channel by channel, each channel column by column, each column row by row."""
  image, channel, col, row = np.indices((count, 3, SIZE, SIZE))
  return _pixel(image, channel, row, col, offset).astype(np.uint8).tobytes()


def _expected_images(count, offset):
  """The images of _file_bytes(count, offset) as [N, row, column, channel]."""
  image, row, col, channel = np.indices((count, SIZE, SIZE, 3))
  return _pixel(image, channel, row, col, offset).astype(np.uint8)


OFFSETS = {'train': 0, 'test': 100, 'unlabeled': 200}


@pytest.fixture
def stl10_dir(tmp_path):
  """tmp_path/stl10_binary/ with the six files of the binary version."""
  files = tmp_path / 'stl10_binary'
  files.mkdir()
  (files / 'train_X.bin').write_bytes(_file_bytes(NUM_TRAIN, OFFSETS['train']))
  (files / 'train_y.bin').write_bytes(bytes(TRAIN_BYTES))
  (files / 'test_X.bin').write_bytes(_file_bytes(NUM_TEST, OFFSETS['test']))
  (files / 'test_y.bin').write_bytes(bytes(TEST_BYTES))
  (files / 'unlabeled_X.bin').write_bytes(_file_bytes(NUM_UNLABELED, OFFSETS['unlabeled']))
  (files / 'fold_indices.txt').write_text(
      ''.join(' '.join(map(str, fold)) + ' \n' for fold in FOLDS))
  return tmp_path


def test_binary_files_are_read_as_published(stl10_dir):
  data = datasets.load_dataset('stl10', source='local', data_dir=str(stl10_dir))
  assert data.source == f'local:{stl10_dir / "stl10_binary"}'
  assert data.image_shape == (96, 96, 3) and data.num_classes == 10
  raw = (stl10_dir / 'stl10_binary' / 'train_X.bin').read_bytes()
  # The second byte is row 1 of column 0, the 97th row 0 of column 1 (red, image 0).
  assert (raw[1], raw[96]) == (2, 5)
  assert (data.train_images[0, 1, 0, 0], data.train_images[0, 0, 1, 0]) == (2, 5)
  # Green starts after the 96 x 96 red bytes; image 1 after 3 x 96 x 96 bytes.
  assert raw[96 * 96] == data.train_images[0, 0, 0, 1] == 85
  assert raw[3 * 96 * 96] == data.train_images[1, 0, 0, 0] == 37
  for split in ('train', 'test', 'unlabeled'):
    images = getattr(data, f'{split}_images')
    assert images.dtype == np.uint8
    np.testing.assert_array_equal(
        images, _expected_images(len(images), OFFSETS[split]))
  assert len(data.unlabeled_images) == NUM_UNLABELED
  # Labels 1..10 in the files are classes 0..9: 10 is the truck, 1 the airplane.
  np.testing.assert_array_equal(data.train_labels, np.array(TRAIN_BYTES) - 1)
  np.testing.assert_array_equal(data.test_labels, [9, 0, 1, 2, 8, 9])
  assert data.train_labels.dtype == np.int64
  names = dataset_specs.STL10.class_names
  assert (names[0], names[9]) == ('airplane', 'truck')
  assert [list(fold) for fold in data.folds] == FOLDS
  assert all(fold.dtype == np.int64 for fold in data.folds)


def test_fold_is_the_labeled_set(stl10_dir):
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='local',
                                                       data_dir=str(stl10_dir), stl10_fold=3,
                                                       num_labeled=None, validation_size=4,
                                                       split_seed=2))
  train = _expected_images(NUM_TRAIN, OFFSETS['train'])
  labels = np.array(TRAIN_BYTES) - 1
  split = data.splits
  np.testing.assert_array_equal(split.labeled, FOLDS[3])
  np.testing.assert_array_equal(data.labeled_images, train[FOLDS[3]])
  np.testing.assert_array_equal(data.labeled_labels, labels[FOLDS[3]])
  # Validation: 4 of the 9 train images outside the fold; the unlabeled stream: train minus
  # validation (the fold included), then the unlabeled split.
  assert len(split.validation) == 4 and not set(split.validation) & set(FOLDS[3])
  np.testing.assert_array_equal(data.validation_images, train[split.validation])
  np.testing.assert_array_equal(data.validation_labels, labels[split.validation])
  np.testing.assert_array_equal(split.unlabeled,
                                sorted(set(range(NUM_TRAIN)) - set(split.validation)))
  np.testing.assert_array_equal(
      data.unlabeled_images,
      np.concatenate([train[split.unlabeled],
                      _expected_images(NUM_UNLABELED, OFFSETS['unlabeled'])]))
  np.testing.assert_array_equal(data.test_images, _expected_images(NUM_TEST, OFFSETS['test']))
  np.testing.assert_array_equal(data.test_labels, [9, 0, 1, 2, 8, 9])
  assert data.image_shape == (96, 96, 3) and not data.resizes_images
  assert data.class_names == dataset_specs.STL10.class_names
  # Another fold labels other images.
  other = ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='local',
                                                        data_dir=str(stl10_dir), stl10_fold=7,
                                                        num_labeled=None, validation_size=4))
  np.testing.assert_array_equal(other.splits.labeled, FOLDS[7])


def test_without_a_fold_the_whole_train_split_is_drawn_from(stl10_dir):
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='local',
                                                       data_dir=str(stl10_dir), num_labeled=None,
                                                       validation_size=2))
  assert len(data.labeled_labels) == NUM_TRAIN - 2
  assert len(data.unlabeled_images) == NUM_TRAIN - 2 + NUM_UNLABELED


def test_a_fold_with_num_labeled_draws_per_class_from_it(tmp_path):
  arrays = fixtures.make_fake_dataset(str(tmp_path), 'stl10', num_train=200, num_test=10)
  fold = datasets.load_dataset('stl10', source='local', data_dir=str(tmp_path)).folds[2]
  assert np.bincount(arrays[1][fold], minlength=10).min() >= 2
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='local',
                                                       data_dir=str(tmp_path), stl10_fold=2,
                                                       num_labeled=20, validation_size=50))
  assert set(data.splits.labeled) <= set(fold)
  np.testing.assert_array_equal(np.bincount(data.labeled_labels), [2] * 10)
  np.testing.assert_array_equal(data.labeled_labels, arrays[1][data.splits.labeled])


def test_a_subset_keeps_the_folds_images_in_it(tmp_path):
  fixtures.make_fake_dataset(str(tmp_path), 'stl10', num_train=100, num_test=10)
  whole = datasets.load_dataset('stl10', source='local', data_dir=str(tmp_path))
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='local',
                                                       data_dir=str(tmp_path), stl10_fold=0,
                                                       num_labeled=None, validation_size=5,
                                                       max_train_examples=50))
  # The fold's images among the 50 kept, and at most 50 of the unlabeled split.
  fold_images = whole.train_images[whole.folds[0]]
  kept = [any((image == fold_images).all(axis=(1, 2, 3))) for image in data.labeled_images]
  assert all(kept) and 0 < len(data.labeled_images) < len(fold_images)
  assert len(data.unlabeled_images) == 50 - 5 + 50
  assert '50 unlabeled examples' in data.source


def test_a_subset_without_the_folds_images_is_one_clear_error(stl10_dir):
  with pytest.raises(errors.SplitError) as e:
    # The 2 train images kept (SUBSET_SEED) are 0 and 11; fold 2 holds images 2, 3 and 7.
    ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='local', data_dir=str(stl10_dir),
                                                  stl10_fold=2, num_labeled=None, validation_size=0,
                                                  max_train_examples=2))
  assert 'the labeled fold holds no training example.' in str(e.value)
  assert 'max_train_examples=2' in str(e.value)


def test_another_size_fits_the_unlabeled_split_too(stl10_dir):
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='local',
                                                       data_dir=str(stl10_dir), stl10_fold=0,
                                                       num_labeled=None, validation_size=2,
                                                       image_size=32))
  assert data.image_shape == (32, 32, 3) and data.resizes_images
  np.testing.assert_array_equal(
      data.unlabeled_images[-NUM_UNLABELED:],
      image_rules.fit_images(_expected_images(NUM_UNLABELED, OFFSETS['unlabeled']), 32))


def test_the_default_size_is_96():
  assert dataset_specs.default_image_size('stl10') == 96
  assert ssl_data.image_size_of('stl10', None) == 96
  assert ssl_data.image_size_of('cifar10', None) == 32


@pytest.mark.parametrize('kwargs, error, fragment', [
    (dict(stl10_fold=10), errors.ConfigError,
     'build_ssl_data.stl10_fold must be an integer >= 0 and < 10, got 10'),
    (dict(stl10_fold=1.0), errors.ConfigError, 'must be an integer'),
    (dict(stl10_fold=0, validation_size=10), errors.SplitError,
     'validation_size=10 is more than the 9 training examples outside the labeled fold'),
    (dict(stl10_fold=0, num_labeled=20), errors.SplitError,
     'num_labeled=20 needs 2 labeled examples per class, but class 2 has only 0 training '
     'examples in the labeled fold'),
    (dict(validation_size=12), errors.SplitError, 'must be smaller than the 12 training'),
])
def test_impossible_requests_are_one_clear_error(stl10_dir, kwargs, error, fragment):
  settings = {'num_labeled': None, 'validation_size': 2, **kwargs}
  with pytest.raises(error) as e:
    ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='local', data_dir=str(stl10_dir),
                                                  **settings))
  assert fragment in str(e.value)
  if 'stl10_fold' in kwargs and error is errors.SplitError:
    assert 'stl10_fold = None draws them from the whole train split' in str(e.value)


@pytest.mark.parametrize('dataset', ['cifar10', dataset_specs.IMAGE_FOLDER])
def test_a_fold_of_another_dataset_is_refused(dataset):
  with pytest.raises(errors.ConfigError,
                     match=f"stl10_fold = 0 applies to stl10 only, not '{dataset}': leave "
                     'it unbound, or bind it to None'):
    ssl_data.build_ssl_data(ssl_data.BuildSslData(dataset, stl10_fold=0, num_labeled=None,
                                                  validation_size=0))


@pytest.mark.parametrize('name, content, fragment', [
    ('train_X.bin', b'\0' * 1000, 'holds 1000 bytes, not a whole number of 96x96x3 images'),
    ('train_y.bin', bytes(TRAIN_BYTES[:-1]), '11 labels for the 12 images'),
    ('test_y.bin', bytes([0] + TEST_BYTES[1:]), 'labels span [0, 10], expected [1, 10]'),
    ('test_y.bin', bytes([11] + TEST_BYTES[1:]), 'labels span [1, 11], expected [1, 10]'),
    ('fold_indices.txt', b'0 1 2\n' * 9, 'it has 9 folds (non-empty lines), expected 10'),
    ('fold_indices.txt', b'0 1 12\n' * 10, 'fold 0 spans indices [0, 12], outside the 12'),
    ('fold_indices.txt', b'0 1 x\n' * 10, 'fold 0 holds something other than indices'),
    ('fold_indices.txt', b'0 1 1\n' * 10, 'fold 0 repeats an index'),
])
def test_a_corrupt_file_is_named(stl10_dir, name, content, fragment):
  path = stl10_dir / 'stl10_binary' / name
  path.write_bytes(content)
  with pytest.raises(local_files.CorruptDatasetFileError) as e:
    datasets.load_dataset('stl10', source='local', data_dir=str(stl10_dir))
  assert fragment in str(e.value) and str(path) in str(e.value)


def test_a_missing_file_is_named(stl10_dir):
  os.remove(stl10_dir / 'stl10_binary' / 'fold_indices.txt')
  with pytest.raises(errors.DatasetNotFoundError) as e:
    datasets.load_dataset('stl10', source='local', data_dir=str(stl10_dir))
  assert 'fold_indices.txt (directly or under stl10_binary/)' in str(e.value)
  assert 'stl10_binary.tar.gz' in str(e.value)


def test_the_fixture_writes_what_it_returns(tmp_path):
  arrays = fixtures.make_fake_dataset(str(tmp_path), 'stl10', num_train=30, num_test=10)
  data = datasets.load_dataset('stl10', source='local', data_dir=str(tmp_path))
  for want, got in zip(arrays, (data.train_images, data.train_labels, data.test_images,
                                data.test_labels)):
    np.testing.assert_array_equal(got, want)
  assert data.unlabeled_images.shape == (30, 96, 96, 3)
  assert [len(fold) for fold in data.folds] == [6] * 10


# --- TFDS ---------------------------------------------------------------------------


def test_tfds_mock_has_the_three_splits(tmp_path):
  with tfds.testing.mock_data(num_examples=6):
    data = datasets.load_dataset('stl10', source='tfds', data_dir=str(tmp_path))
    built = ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='tfds',
                                                          data_dir=str(tmp_path), num_labeled=None,
                                                          validation_size=2))
    with pytest.raises(errors.ConfigError, match='has no folds: TFDS keeps neither'):
      ssl_data.build_ssl_data(ssl_data.BuildSslData('stl10', source='tfds', data_dir=str(tmp_path),
                                                    stl10_fold=0, num_labeled=None,
                                                    validation_size=2))
  assert data.source.startswith('tfds:stl10 (train/test/unlabelled) in ')
  with tfds.testing.mock_data(num_examples=6):  # The same examples, one at a time.
    for split, images, labels in (('train', data.train_images, data.train_labels),
                                  ('test', data.test_images, data.test_labels),
                                  ('unlabelled', data.unlabeled_images, None)):
      fixtures.assert_tfds_examples('stl10', split, tmp_path, images, labels)
  for images in (data.train_images, data.test_images, data.unlabeled_images):
    assert images.shape == (6, 96, 96, 3) and images.dtype == np.uint8
  assert data.train_labels.shape == data.test_labels.shape == (6,)
  assert data.train_labels.dtype == np.int64 and 0 <= data.train_labels.min()
  assert data.train_labels.max() < 10 and data.folds is None
  assert built.image_shape == (96, 96, 3)
  assert len(built.labeled_labels) == 4 and len(built.validation_labels) == 2
  assert built.unlabeled_images.shape == (4 + 6, 96, 96, 3)
  np.testing.assert_array_equal(built.unlabeled_images[4:], data.unlabeled_images)
