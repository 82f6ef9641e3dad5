"""Readers of the original distribution files of CIFAR-10, SVHN, Fashion-MNIST and STL-10.

These are the files the dataset authors publish (docs/algorithm.md#data-and-model-selection),
read as they are downloaded, so that no conversion step or network access is needed:

- CIFAR-10: the python pickles `data_batch_1`..`data_batch_5` and `test_batch`, in the
  `cifar-10-batches-py/` directory or inside `cifar-10-python.tar.gz` (read without
  extracting it to disk).
- SVHN cropped digits: `train_32x32.mat`, `test_32x32.mat`, `extra_32x32.mat` (MATLAB v5;
  `X` is [32, 32, 3, N]; label 10 means digit 0).
- Fashion-MNIST: the IDX files `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
  `t10k-images-idx3-ubyte`, `t10k-labels-idx1-ubyte`, gzipped (`.gz`) or not.
- STL-10: the binary version, `stl10_binary/`: `train_X.bin`, `test_X.bin` and
  `unlabeled_X.bin` (uint8, each image 3x96x96 in channel, column, row order), `train_y.bin`
  and `test_y.bin` (uint8 labels 1..10) and `fold_indices.txt` (10 lines of 0-based train
  indices, the predefined labeled folds).

Every reader returns images as uint8 [N, H, W, C] and labels as int64 [N], and checks the
format (magic numbers, shapes, label range) so that a truncated or foreign file raises
`CorruptDatasetFileError` naming the file, instead of training on garbage. The file names
are those of `dataset_specs`; each spec names its `find_*` function here (`reader`).
"""
import codecs
import dataclasses
import gzip
import io
import os
import pickle
import struct
import tarfile
from typing import Callable, List, Optional, Tuple

import numpy as np
import scipy.io

from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs

# (train_images, train_labels, test_images, test_labels), followed, for a dataset with a
# split of images without labels (STL-10), by (unlabeled_images, folds): uint8 [U, H, W, C]
# and a tuple of int64 train indices per predefined fold (None where the source has none).
Arrays = Tuple[np.ndarray, ...]

_CIFAR10 = dataset_specs.CIFAR10
CIFAR10_DIRNAME = _CIFAR10.files_dir
CIFAR10_TARBALL = _CIFAR10.archive
CIFAR10_TRAIN_FILES = _CIFAR10.files[:-1]
CIFAR10_TEST_FILE = _CIFAR10.files[-1]

SVHN_TRAIN_FILE, SVHN_TEST_FILE = dataset_specs.SVHN.files
(SVHN_EXTRA_FILE,) = dataset_specs.SVHN.extra_files

_STL10 = dataset_specs.STL10
(STL10_TRAIN_IMAGES, STL10_TRAIN_LABELS, STL10_TEST_IMAGES, STL10_TEST_LABELS,
 STL10_UNLABELED_IMAGES, STL10_FOLDS) = _STL10.files
# Bytes of one STL-10 image in the .bin files.
STL10_IMAGE_BYTES = int(np.prod(_STL10.image_shape))
# Images transposed to HWC per read of an STL-10 .bin file: bounds the copy beside the result.
STL10_READ_CHUNK = 4096

_FASHION_MNIST = dataset_specs.FASHION_MNIST
FASHION_MNIST_FILES = _FASHION_MNIST.files
(FASHION_MNIST_TRAIN_IMAGES, FASHION_MNIST_TRAIN_LABELS, FASHION_MNIST_TEST_IMAGES,
 FASHION_MNIST_TEST_LABELS) = FASHION_MNIST_FILES

# IDX magic numbers: 0x0000 0x08 (unsigned byte) then the number of dimensions.
IDX_IMAGES_MAGIC = 2051
IDX_LABELS_MAGIC = 2049


class CorruptDatasetFileError(errors.UserError):
  """A dataset file exists but does not hold what its format promises."""


def _corrupt(path: str, problem: str) -> CorruptDatasetFileError:
  return CorruptDatasetFileError(
      f'{path} is not a valid dataset file: {problem}. Delete it and download the '
      'original file again.')


def _check_labels(path: str, labels: np.ndarray, num_classes: int) -> np.ndarray:
  labels = np.asarray(labels)
  if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
    raise _corrupt(path, f'labels have shape {labels.shape} and dtype {labels.dtype}, '
                   'expected a vector of integers')
  if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
    raise _corrupt(path, f'labels span [{labels.min()}, {labels.max()}], expected '
                   f'[0, {num_classes - 1}]')
  return labels.astype(np.int64)


# ---------------------------------------------------------------------------------------
# CIFAR-10


class _CifarUnpickler(pickle.Unpickler):
  """Unpickles only what CIFAR-10 batches hold: dicts, lists, bytes and numpy arrays.

  The batches are pickles; restricting the classes they may name keeps a foreign file
  from running code when it is read.
  """

  _ALLOWED = {
      ('numpy.core.multiarray', '_reconstruct'),
      ('numpy._core.multiarray', '_reconstruct'),
      ('numpy.core.multiarray', 'scalar'),
      ('numpy._core.multiarray', 'scalar'),
      ('numpy', 'ndarray'),
      ('numpy', 'dtype'),
      ('_codecs', 'encode'),
  }

  def find_class(self, module, name):
    if (module, name) not in self._ALLOWED:
      raise pickle.UnpicklingError(f'unexpected object {module}.{name}')
    if module == '_codecs':
      return codecs.encode
    if module.endswith('multiarray'):
      return getattr(_numpy_multiarray(), name)
    return getattr(np, name)


def _numpy_multiarray():
  try:
    from numpy._core import multiarray  # pylint: disable=g-import-not-at-top
  except ImportError:  # numpy < 2
    from numpy.core import multiarray  # pylint: disable=g-import-not-at-top
  return multiarray


def read_cifar10_batch(fileobj, path: str) -> Tuple[np.ndarray, np.ndarray]:
  """Reads one CIFAR-10 batch pickle: b'data' uint8 [N, 3072] channel-major, b'labels'.

  Args:
    fileobj: a binary file object holding the pickle.
    path: the name to show in error messages.

  Returns:
    images uint8 [N, 32, 32, 3], labels int64 [N].
  """
  try:
    batch = _CifarUnpickler(fileobj, encoding='bytes').load()
  except Exception as e:  # pickle raises many types on foreign bytes.
    raise _corrupt(path, f'cannot unpickle it ({e})') from e
  if not isinstance(batch, dict):
    raise _corrupt(path, f'holds a {type(batch).__name__}, expected a dict')
  # The original (python 2) pickles have bytes keys; re-pickled copies may have str keys.
  batch = {k.decode('latin1') if isinstance(k, bytes) else k: v for k, v in batch.items()}
  if 'data' not in batch or 'labels' not in batch:
    raise _corrupt(path, f'keys {sorted(batch)} lack "data" and "labels"')
  data = np.asarray(batch['data'])
  if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
    raise _corrupt(path, f'data has shape {data.shape} and dtype {data.dtype}, '
                   'expected uint8 [N, 3072]')
  try:
    labels = np.asarray(batch['labels'], dtype=np.int64).reshape(-1)
  except (TypeError, ValueError) as e:
    raise _corrupt(path, f'labels are not integers ({e})') from e
  labels = _check_labels(path, labels, _CIFAR10.num_classes)
  if len(labels) != len(data):
    raise _corrupt(path, f'{len(data)} images but {len(labels)} labels')
  images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
  return np.ascontiguousarray(images), labels


def _concatenate(parts) -> Tuple[np.ndarray, np.ndarray]:
  images, labels = zip(*parts)
  return np.concatenate(images), np.concatenate(labels)


def read_cifar10_dir(directory: str) -> Arrays:
  """Reads an extracted `cifar-10-batches-py/` directory (data_batch_1..5, test_batch)."""
  def read(name):
    path = os.path.join(directory, name)
    with open(path, 'rb') as f:
      return read_cifar10_batch(f, path)

  train = _concatenate(read(name) for name in CIFAR10_TRAIN_FILES)
  return train + read(CIFAR10_TEST_FILE)


def read_cifar10_tarball(path: str) -> Arrays:
  """Reads `cifar-10-python.tar.gz` in memory, without extracting it to disk."""
  try:
    with tarfile.open(path, 'r:gz') as tar:
      members = {os.path.basename(m.name): m for m in tar.getmembers() if m.isfile()}
      missing = [n for n in CIFAR10_TRAIN_FILES + (CIFAR10_TEST_FILE,)
                 if n not in members]
      if missing:
        raise _corrupt(path, f'the archive lacks {", ".join(missing)}')

      def read(name):
        member = members[name]
        return read_cifar10_batch(io.BytesIO(tar.extractfile(member).read()),
                                  f'{path}:{member.name}')

      train = _concatenate(read(name) for name in CIFAR10_TRAIN_FILES)
      return train + read(CIFAR10_TEST_FILE)
  except (tarfile.TarError, OSError, EOFError) as e:
    raise _corrupt(path, f'cannot read the gzipped tar archive ({e})') from e


# ---------------------------------------------------------------------------------------
# SVHN


def read_svhn_mat(path: str) -> Tuple[np.ndarray, np.ndarray]:
  """Reads an SVHN cropped-digits .mat file: X [32, 32, 3, N], y [N, 1], 10 = digit 0.

  Returns:
    images uint8 [N, 32, 32, 3], labels int64 [N] in 0..9.
  """
  try:
    mat = scipy.io.loadmat(path, variable_names=('X', 'y'))
  except Exception as e:  # scipy raises ValueError, TypeError, OSError, ... on bad files.
    raise _corrupt(path, f'cannot read it as a MATLAB v5 file ({e})') from e
  if 'X' not in mat or 'y' not in mat:
    raise _corrupt(path, 'it lacks the variables X and y')
  x, y = np.asarray(mat['X']), np.asarray(mat['y'])
  if x.ndim != 4 or x.shape[:3] != (32, 32, 3):
    raise _corrupt(path, f'X has shape {x.shape}, expected [32, 32, 3, N]')
  if x.dtype != np.uint8:
    raise _corrupt(path, f'X has dtype {x.dtype}, expected uint8')
  y = y.reshape(-1)
  if len(y) != x.shape[3]:
    raise _corrupt(path, f'{x.shape[3]} images but {len(y)} labels')
  if not np.all(np.equal(np.mod(y, 1), 0)):
    raise _corrupt(path, 'labels are not integers')
  # Label 10 is digit 0 in the original files (SVHN's format).
  labels = _check_labels(path, y.astype(np.int64), 11) % 10
  return np.ascontiguousarray(x.transpose(3, 0, 1, 2)), labels


# ---------------------------------------------------------------------------------------
# Fashion-MNIST


def read_idx(path: str, magic: int) -> np.ndarray:
  """Reads an IDX file of unsigned bytes (gzipped when `path` ends in .gz).

  Args:
    path: the file.
    magic: the expected magic number, IDX_IMAGES_MAGIC (3 dims) or IDX_LABELS_MAGIC (1).

  Returns:
    uint8 array with the dimensions stored in the header.
  """
  try:
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rb') as f:
      content = f.read()
  except (OSError, EOFError) as e:
    raise _corrupt(path, f'cannot read it ({e})') from e
  if len(content) < 4:
    raise _corrupt(path, 'it is shorter than an IDX header')
  (found,) = struct.unpack('>I', content[:4])
  if found != magic:
    raise _corrupt(path, f'magic number {found}, expected {magic}')
  ndim = magic & 0xFF
  header = 4 + 4 * ndim
  if len(content) < header:
    raise _corrupt(path, 'it is shorter than its IDX header')
  shape = struct.unpack(f'>{ndim}I', content[4:header])
  if len(content) - header != int(np.prod(shape)):
    raise _corrupt(path, f'header says {shape} bytes of data but it holds '
                   f'{len(content) - header}')
  return np.frombuffer(content, dtype=np.uint8, offset=header).reshape(shape)


def fashion_mnist_path(directory: str, stem: str) -> Optional[str]:
  """The path of a Fashion-MNIST file in `directory`, gzipped or not; None if absent."""
  return _file_path(_FASHION_MNIST, directory, stem)


def read_fashion_mnist_dir(directory: str) -> Arrays:
  """Reads the four Fashion-MNIST IDX files from `directory` (.gz or uncompressed).

  Returns:
    train images uint8 [60000, 28, 28, 1], labels int64, and the same for test.
  """
  arrays = []
  for images_stem, labels_stem in ((FASHION_MNIST_TRAIN_IMAGES, FASHION_MNIST_TRAIN_LABELS),
                                   (FASHION_MNIST_TEST_IMAGES, FASHION_MNIST_TEST_LABELS)):
    images_path = fashion_mnist_path(directory, images_stem)
    labels_path = fashion_mnist_path(directory, labels_stem)
    images = read_idx(images_path, IDX_IMAGES_MAGIC)
    if images.shape[1:] != _FASHION_MNIST.image_shape[:2]:
      raise _corrupt(images_path, f'images are {images.shape[1]}x{images.shape[2]}, '
                     'expected 28x28')
    labels = _check_labels(labels_path, read_idx(labels_path, IDX_LABELS_MAGIC),
                           _FASHION_MNIST.num_classes)
    if len(images) != len(labels):
      raise _corrupt(labels_path, f'{len(labels)} labels for the {len(images)} images '
                     f'of {images_path}')
    arrays += [np.ascontiguousarray(images[..., np.newaxis]), labels]
  return tuple(arrays)


# ---------------------------------------------------------------------------------------
# STL-10


def read_stl10_images(path: str) -> np.ndarray:
  """Reads an STL-10 images file (train_X.bin, test_X.bin, unlabeled_X.bin).

  Each image is 3 x 96 x 96 bytes: the red, green and blue planes, each stored column-major
  (the column index before the row index), as MATLAB writes them. The file is read
  STL10_READ_CHUNK images at a time into the result, so that reading unlabeled_X.bin
  (100,000 images, 2.76 GB) holds it once, not twice.

  Returns:
    uint8 [N, 96, 96, 3], row-major (HWC).
  """
  height, width, channels = _STL10.image_shape
  try:
    size = os.path.getsize(path)
    if size % STL10_IMAGE_BYTES:
      raise _corrupt(path, f'it holds {size} bytes, not a whole number of {height}x{width}x'
                     f'{channels} images ({STL10_IMAGE_BYTES} bytes each)')
    images = np.empty((size // STL10_IMAGE_BYTES, height, width, channels), np.uint8)
    with open(path, 'rb') as f:
      for start in range(0, len(images), STL10_READ_CHUNK):
        count = min(STL10_READ_CHUNK, len(images) - start)
        content = f.read(count * STL10_IMAGE_BYTES)
        if len(content) != count * STL10_IMAGE_BYTES:
          raise _corrupt(path, 'it ended while being read')
        images[start:start + count] = np.frombuffer(content, np.uint8).reshape(
            count, channels, width, height).transpose(0, 3, 2, 1)
  except OSError as e:
    raise _corrupt(path, f'cannot read it ({e})') from e
  return images


def read_stl10_labels(path: str, num_images: int, images_path: str) -> np.ndarray:
  """Reads an STL-10 labels file (train_y.bin, test_y.bin): one byte per image, 1..10.

  Returns:
    int64 [num_images] in 0..9.
  """
  try:
    with open(path, 'rb') as f:
      raw = np.frombuffer(f.read(), np.uint8)
  except OSError as e:
    raise _corrupt(path, f'cannot read it ({e})') from e
  if len(raw) != num_images:
    raise _corrupt(path, f'{len(raw)} labels for the {num_images} images of {images_path}')
  if raw.size and (raw.min() < 1 or raw.max() > _STL10.num_classes):
    raise _corrupt(path, f'labels span [{raw.min()}, {raw.max()}], expected '
                   f'[1, {_STL10.num_classes}]')
  return raw.astype(np.int64) - 1


def read_stl10_folds(path: str, num_train: int) -> Tuple[np.ndarray, ...]:
  """Reads fold_indices.txt: one line per fold of space-separated 0-based train indices.

  Returns:
    `num_folds` int64 arrays of indices into train, in the file's order.
  """
  try:
    with open(path, encoding='ascii') as f:
      lines = [line.split() for line in f if line.strip()]
  except (OSError, UnicodeDecodeError) as e:
    raise _corrupt(path, f'cannot read it as text ({e})') from e
  if len(lines) != _STL10.num_folds:
    raise _corrupt(path, f'it has {len(lines)} folds (non-empty lines), expected '
                   f'{_STL10.num_folds}')
  folds = []
  for number, words in enumerate(lines):
    try:
      fold = np.array([int(word) for word in words], np.int64)
    except ValueError as e:
      raise _corrupt(path, f'fold {number} holds something other than indices ({e})') from e
    if fold.min() < 0 or fold.max() >= num_train:
      raise _corrupt(path, f'fold {number} spans indices [{fold.min()}, {fold.max()}], '
                     f'outside the {num_train} training images')
    if len(np.unique(fold)) != len(fold):
      raise _corrupt(path, f'fold {number} repeats an index')
    folds.append(fold)
  return tuple(folds)


def read_stl10_dir(directory: str) -> Arrays:
  """Reads an extracted `stl10_binary/` directory.

  Returns:
    train images uint8 [5000, 96, 96, 3], labels int64; the same for test (8000); the
    unlabeled images uint8 [100000, 96, 96, 3]; the 10 folds (int64 train indices).
  """
  arrays = []
  for images_name, labels_name in ((STL10_TRAIN_IMAGES, STL10_TRAIN_LABELS),
                                   (STL10_TEST_IMAGES, STL10_TEST_LABELS)):
    images_path = os.path.join(directory, images_name)
    images = read_stl10_images(images_path)
    arrays += [images, read_stl10_labels(os.path.join(directory, labels_name), len(images),
                                         images_path)]
  unlabeled = read_stl10_images(os.path.join(directory, STL10_UNLABELED_IMAGES))
  folds = read_stl10_folds(os.path.join(directory, STL10_FOLDS), len(arrays[0]))
  return tuple(arrays) + (unlabeled, folds)


# ---------------------------------------------------------------------------------------
# Finding a copy in a directory


@dataclasses.dataclass(frozen=True)
class LocalCopy:
  """A copy of a dataset found on disk, not yet read.

  Attributes:
    description: where it is, for `ImageDataset.source` (e.g. the directory).
    read: reads it; returns its `Arrays` (train images, train labels, test images, test
      labels[, unlabeled images, folds]).
  """
  description: str
  read: Callable[[], Arrays]


def _display(spec, name: str) -> str:
  """A file name as error messages show it: `name[.gz]` where the suffix is optional."""
  return name + (f'[{spec.optional_suffix}]' if spec.optional_suffix else '')


def _file_path(spec, directory: str, name: str) -> Optional[str]:
  """The path of file `name` of `spec` in `directory` (with its optional suffix first, e.g.
  gzipped, then without); None if absent."""
  for candidate in ((name + spec.optional_suffix,) if spec.optional_suffix else ()) + (name,):
    path = os.path.join(directory, candidate)
    if os.path.isfile(path):
      return path
  return None


def _all_files(spec, directory: str, include_extra: bool = False) -> bool:
  return all(_file_path(spec, directory, n) for n in spec.required_files(include_extra))


def expected_files(name: str, include_extra: bool = False) -> str:
  """Which files `find_local_copy` looks for, in words, for error messages."""
  spec = dataset_specs.REGISTRY[name]
  text = ', '.join(_display(spec, f) for f in spec.required_files(include_extra))
  if spec.files_dir:
    text += f' (directly or under {spec.files_dir}/)'
  if spec.archive:
    text += f', or {spec.archive}'
  return text


def missing_files(name: str, directory: str, include_extra: bool = False) -> List[str]:
  """The required files of dataset `name` that `directory` lacks (for error messages)."""
  spec = dataset_specs.REGISTRY[name]
  return [_display(spec, f) for f in spec.required_files(include_extra)
          if _file_path(spec, directory, f) is None]


def find_cifar10(spec, directory: str, include_extra: bool) -> Optional[LocalCopy]:
  """CIFAR-10's batches in `directory` or its `cifar-10-batches-py/`, else its tarball."""
  del include_extra  # CIFAR-10 has no extra split.
  for batch_dir in (directory, os.path.join(directory, spec.files_dir)):
    if _all_files(spec, batch_dir):
      return LocalCopy(batch_dir, lambda d=batch_dir: read_cifar10_dir(d))
  tarball = os.path.join(directory, spec.archive)
  if os.path.isfile(tarball):
    return LocalCopy(tarball, lambda: read_cifar10_tarball(tarball))
  return None


def find_stl10(spec, directory: str, include_extra: bool) -> Optional[LocalCopy]:
  """STL-10's binary files in `directory` or its `stl10_binary/`."""
  del include_extra  # STL-10's unlabeled split is always read.
  for files_dir in (directory, os.path.join(directory, spec.files_dir)):
    if _all_files(spec, files_dir):
      return LocalCopy(files_dir, lambda d=files_dir: read_stl10_dir(d))
  return None


def find_svhn(spec, directory: str, include_extra: bool) -> Optional[LocalCopy]:
  """SVHN's .mat files in `directory` (with extra_32x32.mat when include_extra)."""
  if not _all_files(spec, directory, include_extra):
    return None
  return LocalCopy(directory, lambda: _read_svhn_dir(directory, include_extra))


def find_fashion_mnist(spec, directory: str, include_extra: bool) -> Optional[LocalCopy]:
  """Fashion-MNIST's four IDX files in `directory`, gzipped or not."""
  del include_extra  # Fashion-MNIST has no extra split.
  if not _all_files(spec, directory):
    return None
  return LocalCopy(directory, lambda: read_fashion_mnist_dir(directory))


def _read_svhn_dir(directory: str, include_extra: bool) -> Arrays:
  train_images, train_labels = read_svhn_mat(os.path.join(directory, SVHN_TRAIN_FILE))
  if include_extra:
    extra_images, extra_labels = read_svhn_mat(os.path.join(directory, SVHN_EXTRA_FILE))
    train_images = np.concatenate([train_images, extra_images])
    train_labels = np.concatenate([train_labels, extra_labels])
  return (train_images, train_labels) + read_svhn_mat(
      os.path.join(directory, SVHN_TEST_FILE))


def find_local_copy(name: str, directory: str,
                    include_extra: bool = False) -> Optional[LocalCopy]:
  """Looks for the original files of dataset `name` in `directory` (not recursively).

  Args:
    name: a name of `dataset_specs.REGISTRY`; its spec's `reader` (a function of this
      module) looks.
    directory: where to look.
    include_extra: SVHN only: also require `extra_32x32.mat` and append it to train.

  Returns:
    The copy found, or None when the directory lacks any of the required files.
  """
  if not os.path.isdir(directory):
    return None
  spec = dataset_specs.REGISTRY[name]
  return globals()[spec.reader](spec, directory, include_extra)
