"""Tiny datasets written in the real distribution formats, for tests.

The writers produce the files the dataset authors publish (CIFAR-10 python pickles and
tarball, SVHN .mat, Fashion-MNIST IDX .gz, STL-10's binary files), so that tests exercise the
same readers as
real data. `make_fake_dataset` writes a small learnable dataset where
`load_dataset(name, source='local', data_dir=directory)` finds it. Pure numpy / scipy.
"""
import gzip
import io
import os
import pickle
import struct
import tarfile

import numpy as np
import scipy.io

from tf_ipmssl.data import dataset_specs

CIFAR10_LABEL_NAMES = dataset_specs.CIFAR10.class_names


def fake_dataset_dir(directory, name):
  """Where make_fake_dataset writes dataset `name`'s files under `directory`: the
  directory its archive unpacks to (CIFAR-10), else its first data_dir sub-directory."""
  spec = dataset_specs.REGISTRY[name]
  return os.path.join(str(directory), spec.files_dir or spec.subdirs[0])


def _cifar10_batch(images, labels, batch_label):
  """A batch dict as in the original pickles: bytes keys, data [N, 3072] channel-major."""
  images = np.asarray(images, np.uint8)
  return {
      b'batch_label': batch_label.encode(),
      b'labels': [int(y) for y in labels],
      b'data': images.transpose(0, 3, 1, 2).reshape(len(images), 3 * 32 * 32),
      b'filenames': [f'image_{i}.png'.encode() for i in range(len(images))],
  }


def _cifar10_files(train_images, train_labels, test_images, test_labels):
  """{file name: pickled bytes} of cifar-10-batches-py/."""
  files = {}
  *train_files, test_file = dataset_specs.CIFAR10.files
  parts = np.array_split(np.arange(len(train_images)), len(train_files))
  for i, (name, part) in enumerate(zip(train_files, parts), start=1):
    files[name] = _cifar10_batch(
        np.asarray(train_images)[part], np.asarray(train_labels)[part],
        f'training batch {i} of 5')
  files[test_file] = _cifar10_batch(test_images, test_labels, 'testing batch 1 of 1')
  files['batches.meta'] = {
      b'label_names': [n.encode() for n in CIFAR10_LABEL_NAMES],
      b'num_cases_per_batch': len(parts[0]),
      b'num_vis': 3 * 32 * 32,
  }
  # Protocol 2, as the original python 2 pickles.
  return {name: pickle.dumps(content, protocol=2) for name, content in files.items()}


def write_cifar10_batches(directory, train_images, train_labels, test_images,
                          test_labels):
  """Writes `directory/cifar-10-batches-py/` (data_batch_1..5, test_batch, batches.meta).

  Images are uint8 [N, 32, 32, 3]; train is spread over the 5 data batches.
  Returns the cifar-10-batches-py path.
  """
  batch_dir = fake_dataset_dir(directory, 'cifar10')
  os.makedirs(batch_dir, exist_ok=True)
  for name, content in _cifar10_files(train_images, train_labels, test_images,
                                      test_labels).items():
    with open(os.path.join(batch_dir, name), 'wb') as f:
      f.write(content)
  return batch_dir


def write_cifar10_tarball(path, train_images, train_labels, test_images, test_labels):
  """Writes `cifar-10-python.tar.gz` at `path`, holding cifar-10-batches-py/. Returns it."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with tarfile.open(path, 'w:gz') as tar:
    for name, content in _cifar10_files(train_images, train_labels, test_images,
                                        test_labels).items():
      info = tarfile.TarInfo(f'{dataset_specs.CIFAR10.files_dir}/{name}')
      info.size = len(content)
      tar.addfile(info, io.BytesIO(content))
  return path


def write_svhn_mat(path, images, labels):
  """Writes an SVHN .mat file: X uint8 [32, 32, 3, N], y [N, 1] with 10 for digit 0."""
  images = np.asarray(images, np.uint8)
  labels = np.asarray(labels)
  y = np.where(labels == 0, 10, labels).astype(np.uint8).reshape(-1, 1)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  scipy.io.savemat(path, {'X': images.transpose(1, 2, 3, 0), 'y': y})
  return path


def write_idx(path, array, magic):
  """Writes an IDX file of unsigned bytes (gzipped when path ends in .gz)."""
  array = np.asarray(array, np.uint8)
  header = struct.pack('>I', magic) + struct.pack(f'>{array.ndim}I', *array.shape)
  opener = gzip.open if path.endswith('.gz') else open
  with opener(path, 'wb') as f:
    f.write(header + array.tobytes())
  return path


def write_idx_gz(directory, train_images, train_labels, test_images, test_labels):
  """Writes the four Fashion-MNIST .gz files (images [N, 28, 28] or [N, 28, 28, 1])."""
  os.makedirs(directory, exist_ok=True)
  for stem, array, magic in zip(dataset_specs.FASHION_MNIST.files,
                                (train_images, train_labels, test_images, test_labels),
                                (2051, 2049, 2051, 2049)):
    array = np.asarray(array)
    if magic == 2051 and array.ndim == 4:
      array = array[..., 0]
    write_idx(os.path.join(directory, stem + '.gz'), array, magic)
  return directory


def fake_images_and_labels(name, num_examples, seed=0, num_classes=10):
  """Random images that depend on their class, so that a classifier can learn them.

  Each class has a blocky prototype (4x4-pixel blocks of a random colour); an image is
  70% its class prototype and 30% per-pixel noise. The prototypes depend only on
  `name`, so train and test (drawn with different seeds) share them.

  Returns:
    uint8 [N, H, W, C] images and int64 [N] labels (balanced: N/K per class, +-1).
  """
  height, width, channels = dataset_specs.REGISTRY[name].image_shape
  blocks = np.random.default_rng(sum(map(ord, name))).integers(
      0, 256, size=(num_classes, height // 4, width // 4, channels))
  prototypes = blocks.repeat(4, axis=1).repeat(4, axis=2)
  rng = np.random.default_rng(seed)
  labels = rng.permutation(np.arange(num_examples) % num_classes).astype(np.int64)
  noise = rng.integers(0, 256, size=(num_examples, height, width, channels))
  images = 0.7 * prototypes[labels] + 0.3 * noise
  return np.round(images).astype(np.uint8), labels


def write_stl10_binary(directory, train_images, train_labels, test_images, test_labels,
                       unlabeled_images, folds):
  """Writes `directory/stl10_binary/` as the binary version of STL-10 is distributed.

  Images uint8 [N, 96, 96, 3] are stored as 3x96x96 each, every channel plane column-major;
  labels 0..9 as bytes 1..10; folds (sequences of 0-based train indices) one line each,
  space-separated, in fold_indices.txt. Returns the stl10_binary path.
  """
  spec = dataset_specs.STL10
  (train_x, train_y, test_x, test_y, unlabeled_x, folds_file) = spec.files
  files_dir = fake_dataset_dir(directory, 'stl10')
  os.makedirs(files_dir, exist_ok=True)
  contents = {
      train_x: np.asarray(train_images, np.uint8).transpose(0, 3, 2, 1).tobytes(),
      train_y: (np.asarray(train_labels) + 1).astype(np.uint8).tobytes(),
      test_x: np.asarray(test_images, np.uint8).transpose(0, 3, 2, 1).tobytes(),
      test_y: (np.asarray(test_labels) + 1).astype(np.uint8).tobytes(),
      unlabeled_x: np.asarray(unlabeled_images, np.uint8).transpose(0, 3, 2, 1).tobytes(),
      folds_file: ''.join(' '.join(str(int(i)) for i in fold) + ' \n'
                          for fold in folds).encode('ascii'),
  }
  for name, content in contents.items():
    with open(os.path.join(files_dir, name), 'wb') as f:
      f.write(content)
  return files_dir


def fake_stl10_folds(num_train, seed=2718):
  """STL-10's 10 folds for a train split of `num_train` images: each a seeded random fifth
  of it (1,000 of the 5,000 in the real files), sorted. (Not seed 0: the subsets and splits
  of seed 0 would draw the same permutation.)"""
  rng = np.random.default_rng(seed)
  size = max(1, num_train // 5)
  return tuple(np.sort(rng.permutation(num_train)[:size])
               for _ in range(dataset_specs.STL10.num_folds))


def _write_fake_stl10(directory, train_images, train_labels, test_images, test_labels):
  """STL-10's files with as many unlabeled images as train images (of the same classes,
  their labels dropped) and fake_stl10_folds."""
  unlabeled_images, _ = fake_images_and_labels('stl10', len(train_images),
                                               seed=len(train_images) + 7919)
  write_stl10_binary(directory, train_images, train_labels, test_images, test_labels,
                     unlabeled_images, fake_stl10_folds(len(train_images)))


def _write_fake_svhn(directory, train_images, train_labels, test_images, test_labels):
  train_file, test_file = dataset_specs.SVHN.files
  svhn_dir = fake_dataset_dir(directory, 'svhn')
  write_svhn_mat(os.path.join(svhn_dir, train_file), train_images, train_labels)
  write_svhn_mat(os.path.join(svhn_dir, test_file), test_images, test_labels)


def _write_fake_fashion_mnist(directory, *arrays):
  write_idx_gz(fake_dataset_dir(directory, 'fashion_mnist'), *arrays)


# The fixture of each local-file reader (`DatasetSpec.reader`): writes the four arrays in
# its format under a directory.
FAKE_WRITERS = {'find_cifar10': write_cifar10_batches, 'find_svhn': _write_fake_svhn,
                'find_fashion_mnist': _write_fake_fashion_mnist,
                'find_stl10': _write_fake_stl10}


def make_fake_dataset(directory, name, num_train=500, num_test=100, seed=0):
  """Writes a small fake `name` dataset where `load_dataset` (source='local') finds it.

  Layout under `directory`: `fake_dataset_dir(directory, name)` (cifar10 ->
  cifar-10-batches-py/, svhn -> svhn/ (train_32x32.mat, test_32x32.mat), fashion_mnist ->
  fashion_mnist/ (IDX .gz), stl10 -> stl10_binary/ (the .bin files, with num_train
  unlabeled images, and fold_indices.txt: fake_stl10_folds)).

  Returns:
    (train_images, train_labels, test_images, test_labels) as written (uint8 NHWC,
    int64), i.e. what load_dataset must return.
  """
  if name not in dataset_specs.REGISTRY:
    raise ValueError(f'unknown dataset {name!r}')
  train_images, train_labels = fake_images_and_labels(name, num_train, seed=2 * seed)
  test_images, test_labels = fake_images_and_labels(name, num_test, seed=2 * seed + 1)
  arrays = (train_images, train_labels, test_images, test_labels)
  FAKE_WRITERS[dataset_specs.REGISTRY[name].reader](directory, *arrays)
  return arrays


def assert_tfds_examples(tfds_name, split, data_dir, images, labels=None):
  """`images` (and `labels`) are the examples of TFDS's `split`, read another way than
  tfds_source reads it: tfds.load one example at a time. Under tfds.testing.mock_data, which
  draws example i from seed i, both reads see the same examples in the same order."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  examples = list(tfds.as_numpy(tfds.load(tfds_name, split=split, data_dir=str(data_dir),
                                          shuffle_files=False)))
  np.testing.assert_array_equal(images, np.stack([e['image'] for e in examples]))
  if labels is not None:
    np.testing.assert_array_equal(labels, [e['label'] for e in examples])
