"""The image datasets (docs/algorithm.md#data-and-model-selection), loaded whole into memory.

`load_dataset` finds a dataset wherever it already is, in this order:

1. 'local': the original distribution files (`local_files`) in
   - `data_dir`, and its sub-directories named after the dataset (when data_dir is
     given, nowhere else);
   - `$TF_IPMSSL_DATA_DIR`, likewise;
   - `~/.cache/tf_ipmssl/<name>`;
   - system directories (`DatasetSpec.system_dirs`; Fashion-MNIST:
     `/usr/share/datasets/fashion-mnist`, from the Debian package dataset-fashion-mnist).
2. 'tfds': TensorFlow Datasets, in `data_dir` (TFDS's default when None); it downloads
   only with `download=True`.

It writes nothing to disk. When nothing is found, one `DatasetNotFoundError` lists every
place searched and how to get the data.
"""
import dataclasses
import os
from typing import List, Optional, Tuple

import numpy as np

from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import local_files
from tf_ipmssl.data import tfds_source

DATASETS = dataset_specs.names()
SOURCES = ('auto', 'local', 'tfds')
DATA_DIR_ENV = 'TF_IPMSSL_DATA_DIR'
# The ImageDataset fields of a loader's arrays (local_files.Arrays), in their order.
_ARRAY_FIELDS = ('train_images', 'train_labels', 'test_images', 'test_labels',
                 'unlabeled_images', 'folds')


@dataclasses.dataclass(frozen=True, eq=False)
class ImageDataset:
  """A dataset's train and test splits, as loaded.

  Attributes:
    name: one of DATASETS.
    train_images: uint8 [N, H, W, C] (C = 1 for fashion_mnist); SVHN extra appended
      when requested.
    train_labels: int64 [N], in [0, num_classes).
    test_images: uint8 [M, H, W, C].
    test_labels: int64 [M].
    num_classes: K.
    source: where it was loaded from, for humans and run logs ('local:<path>' or
      'tfds:<name> ...').
    unlabeled_images: uint8 [U, H, W, C], a split of images without labels (STL-10's
      100,000); None where the dataset has none.
    folds: int64 indices into train of each predefined labeled fold (STL-10's
      fold_indices.txt); None where the dataset has none or its source keeps none (TFDS).
  """
  name: str
  train_images: np.ndarray
  train_labels: np.ndarray
  test_images: np.ndarray
  test_labels: np.ndarray
  num_classes: int
  source: str
  unlabeled_images: Optional[np.ndarray] = None
  folds: Optional[Tuple[np.ndarray, ...]] = None

  @property
  def image_shape(self) -> Tuple[int, int, int]:
    """(H, W, C) of one image, as stored (before padding to 32x32)."""
    return tuple(self.train_images.shape[1:])


def _local_search_dirs(name: str, data_dir: Optional[str]) -> List[str]:
  """The directories searched for local files, in order, without duplicates.

  A named data_dir is the only place searched: the user asked for that copy, and training
  silently on another one (the system's) would be a different experiment.
  """
  spec = dataset_specs.REGISTRY[name]
  dirs = []
  for base in ((data_dir,) if data_dir else (os.environ.get(DATA_DIR_ENV),)):
    if base:
      base = os.path.expanduser(base)
      dirs += [base] + [os.path.join(base, sub) for sub in spec.subdirs]
  if not data_dir:
    dirs.append(os.path.join(os.path.expanduser('~'), '.cache', 'tf_ipmssl', name))
    dirs += spec.system_dirs
  return list(dict.fromkeys(os.path.normpath(d) for d in dirs))


def _load_local(name, data_dir, include_extra, searched):
  """Returns (arrays, source) of the first local copy found, else None."""
  for directory in _local_search_dirs(name, data_dir):
    copy = local_files.find_local_copy(name, directory, include_extra)
    if copy is not None:
      return copy.read(), f'local:{copy.description}'
    if os.path.isdir(directory):
      missing = local_files.missing_files(name, directory, include_extra)
      state = 'files missing' + (f': {", ".join(missing)}' if missing else '')
    else:
      state = 'no such directory'
    searched.append(f'{directory} ({state})')
  return None


def _load_tfds(name, data_dir, include_extra, download, searched):
  try:
    return tfds_source.load_tfds(name, data_dir=data_dir, include_extra=include_extra,
                                 download=download)
  except errors.DatasetNotFoundError as e:
    searched.append(str(e))
    return None


def _not_found_message(name, source, data_dir, include_extra, searched_local,
                       searched_tfds) -> str:
  """One message: every place searched, what was expected there, how to get the data."""
  lines = [f'Dataset {name!r} not found (source={source!r}).']
  if searched_local:
    lines.append('Looked for the original files '
                 f'({local_files.expected_files(name, include_extra)}) in:')
    lines += [f'  - {place}' for place in searched_local]
    lines.append(f'  (pass data_dir or set ${DATA_DIR_ENV} to search another directory)')
  if searched_tfds:
    lines.append('Looked in TensorFlow Datasets:')
    lines += [f'  - {place}' for place in searched_tfds]
  how = []
  if source != 'tfds':
    how.append(dataset_specs.REGISTRY[name].how_to_get)
  if source != 'local':
    data_dir_flag = f' --data_dir={data_dir}' if data_dir else ''
    how.append(f'run `tfds build {dataset_specs.REGISTRY[name].tfds_name}{data_dir_flag}` on a '
               'machine with internet access, or pass download=True '
               '(gin: build_ssl_data.download = True)')
  lines.append('To get it: ' + '; or '.join(how) + '.')
  return '\n'.join(lines)


def load_dataset(name: str, source: str = 'auto', data_dir: Optional[str] = None,
                 include_extra: bool = False, download: bool = False) -> ImageDataset:
  """Loads dataset `name` (train and test) from the first source that has it.

  Args:
    name: one of DATASETS.
    source: 'local' (original files), 'tfds', or 'auto' (local, then tfds).
    data_dir: a directory searched first for the original files; also TFDS's data_dir.
    include_extra: SVHN only: append the 531,131 'extra' examples to train.
    download: let TFDS download and prepare the dataset if it does not have it.

  Returns:
    The dataset, with `source` saying where it came from.

  Raises:
    ConfigError: unknown name or source, or include_extra for a dataset other than SVHN.
    DatasetNotFoundError: no source had it; the message lists every place searched.
    local_files.CorruptDatasetFileError: a file was found but is damaged.
  """
  errors.check_choice(name, DATASETS, 'dataset', 'valid names')
  errors.check_choice(source, SOURCES, 'data source', 'valid sources')
  if include_extra and not dataset_specs.REGISTRY[name].extra_files:
    with_extra = [s.name for s in dataset_specs.REGISTRY.values() if s.extra_files]
    raise errors.ConfigError(
        f'include_extra=True applies to {", ".join(with_extra)} only, not {name!r}; set it '
        'to False.')

  searched_local, searched_tfds = [], []
  found = None
  if source in ('auto', 'local'):
    found = _load_local(name, data_dir, include_extra, searched_local)
  if found is None and source in ('auto', 'tfds'):
    found = _load_tfds(name, data_dir, include_extra, download, searched_tfds)
  if found is None:
    raise errors.DatasetNotFoundError(
        _not_found_message(name, source, data_dir, include_extra, searched_local,
                           searched_tfds))

  arrays, where = found
  return ImageDataset(name=name, **dict(zip(_ARRAY_FIELDS, arrays)),
                      num_classes=dataset_specs.REGISTRY[name].num_classes, source=where)
