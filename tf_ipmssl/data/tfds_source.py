"""Loading the datasets through TensorFlow Datasets (TFDS), as numpy arrays.

TFDS is the second source `load_dataset` tries (after the original files, see
`local_files`). It is offline-friendly by default: without `download=True` a dataset that
TFDS has not prepared in its data_dir counts as not found, instead of starting a download.
"""
import contextlib
import tempfile
from typing import Tuple

import numpy as np
import tensorflow_datasets as tfds

from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs

# Examples per batch when reading a split into memory. A finite size rather than
# TFDS's batch_size=-1, which pads to `sys.maxsize` and aborts the process when the split
# sizes are unknown (as under `tfds.testing.mock_data` without metadata files).
_READ_BATCH = 8192


@contextlib.contextmanager
def _scratch_tempdir():
  """Python's temporary files in a folder removed on exit. TFDS makes a temporary folder
  (tempfile.mkdtemp) for every builder of a dataset it has not prepared, to fetch metadata
  from its bucket, and never removes it: each such lookup would leave an empty folder in
  /tmp. (Process-wide while it lasts: tempfile has one default folder.)"""
  previous = tempfile.tempdir
  with tempfile.TemporaryDirectory(prefix='tf_ipmssl_tfds_') as scratch:
    tempfile.tempdir = scratch
    try:
      yield
    finally:
      tempfile.tempdir = previous


def _read_split(builder, split: str) -> Tuple[np.ndarray, np.ndarray]:
  ds = builder.as_dataset(split=split, as_supervised=True, batch_size=_READ_BATCH,
                          shuffle_files=False)
  images, labels = [], []
  for batch_images, batch_labels in tfds.as_numpy(ds):
    images.append(batch_images)
    labels.append(batch_labels)
  shape = builder.info.features['image'].shape
  if not images:
    return np.zeros((0,) + tuple(shape), np.uint8), np.zeros((0,), np.int64)
  return (np.concatenate(images).astype(np.uint8, copy=False),
          np.concatenate(labels).astype(np.int64, copy=False))


def _read_images(builder, split: str) -> np.ndarray:
  """The images of a split without labels (their 'label' is -1 in TFDS), uint8."""
  ds = builder.as_dataset(split=split, batch_size=_READ_BATCH, shuffle_files=False)
  images = [batch['image'] for batch in tfds.as_numpy(ds)]
  if not images:
    return np.zeros((0,) + tuple(builder.info.features['image'].shape), np.uint8)
  return np.concatenate(images).astype(np.uint8, copy=False)


def load_tfds(name: str, data_dir=None, include_extra: bool = False,
              download: bool = False):
  """Loads dataset `name` from TFDS.

  Args:
    name: a name of `dataset_specs.REGISTRY`.
    data_dir: TFDS data_dir; None for TFDS's default ($TFDS_DATA_DIR or
      ~/tensorflow_datasets).
    include_extra: SVHN only: train is the 'train+extra' split.
    download: download and prepare the dataset when TFDS does not have it.

  Returns:
    (arrays, source): arrays as local_files.Arrays (train_images uint8 [N,H,W,C],
    train_labels int64 [N], test_images, test_labels, then for a dataset with a split of
    images without labels (STL-10's 'unlabelled') those images and None for the folds:
    TFDS keeps no fold_indices.txt, and its train split is not in the original order); source
    says where it came from.

  Raises:
    DatasetNotFoundError: TFDS has not prepared it and `download` is False, or the
      download failed; the message names the TFDS directory.
  """
  tfds_name = dataset_specs.REGISTRY[name].tfds_name
  with _scratch_tempdir():
    builder = tfds.builder(tfds_name, data_dir=data_dir)
  where = f'TFDS {tfds_name} in {builder.data_dir}'
  if download:
    try:
      builder.download_and_prepare()
    except Exception as e:  # Network and disk failures come in many types.
      raise errors.DatasetNotFoundError(f'{where}: download failed ({e})') from e
  train_split = 'train+extra' if include_extra else 'train'
  unlabeled_split = dataset_specs.REGISTRY[name].tfds_unlabeled_split
  try:
    arrays = _read_split(builder, train_split) + _read_split(builder, 'test')
    if unlabeled_split:
      arrays += (_read_images(builder, unlabeled_split), None)
  except AssertionError as e:
    # What TFDS raises when the dataset is not prepared in data_dir.
    raise errors.DatasetNotFoundError(
        f'{where}: not prepared (download=False)') from e
  splits = '/'.join([train_split, 'test'] + ([unlabeled_split] if unlabeled_split else []))
  return arrays, f'tfds:{tfds_name} ({splits}) in {builder.data_dir}'
