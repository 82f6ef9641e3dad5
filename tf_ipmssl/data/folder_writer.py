"""Writes a built-in dataset as an image folder of PNG files (bin/make_image_folder): the worked
example of training on one's own images, runnable offline with Fashion-MNIST.

The folder has the layout image_folder.py reads: labeled/<class>/, unlabeled/, validation/<class>/
and test/<class>/. The labeled and validation images are those of the built-in dataset's split
(`splits.make_splits` with num_labeled = labeled_per_class x K, validation_size and the split
seed), so that `build_ssl_data.num_labeled`, `validation_size` and `split_seed` of the same
values give a run on the built-in loader the same labeled, validation and test images.
unlabeled/ holds the rest of the training split (the labeled images count as unlabeled when
the folder is read, as with the built-in loader). A file is named after the image's index in
its split (train_00012.png, test_00003.png); a class folder after the class name, lower case,
with '/' and spaces as '_' (e.g. 't-shirt_top').

With `classes` (class mismatch, as `build_ssl_data.classes`), labeled/, validation/ and test/
hold those classes only, split as the built-in loader splits their images; with
`unlabeled_size`, unlabeled/ holds that many images, a share `foreign_share` of them from the
other classes (the images nobody labeled) and the rest from the run's classes.
"""
import os
import re
from typing import Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import image_folder
from tf_ipmssl.data import splits as splits_lib
from tf_ipmssl.data import ssl_data
from tf_ipmssl.data import ssl_data_settings


def folder_name(class_name: str) -> str:
  """A class name as a folder name: lower case, '/' and whitespace as '_'."""
  return re.sub(r'[/\s]+', '_', class_name.strip()).lower()


def _write_pngs(images, paths):
  """Writes uint8 images [N, H, W, C] as PNG files at `paths`."""
  encoded = tf.data.Dataset.from_tensor_slices(images).map(
      tf.io.encode_png, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  for path, png in zip(paths, encoded.as_numpy_iterator()):
    with open(path, 'wb') as f:
      f.write(png)


def _write(directory, folder, images, indices, labels, prefix, class_folders) -> int:
  """Writes images[indices] under directory/folder (in their class folders when `labels`)."""
  paths = []
  for index in indices:
    parts = [directory, folder] + ([class_folders[int(labels[index])]] if labels is not None
                                   else [])
    paths.append(os.path.join(*parts, f'{prefix}_{index:05d}.png'))
  for parent in sorted({os.path.dirname(p) for p in paths}):
    os.makedirs(parent, exist_ok=True)
  _write_pngs(images[indices], paths)
  return len(paths)


def write_image_folder(directory, data, labeled_per_class=10, validation_size=5000,
                       split_seed=0, max_unlabeled: Optional[int] = None,
                       max_test: Optional[int] = None, classes: Optional[Sequence] = None,
                       unlabeled_size: Optional[int] = None,
                       foreign_share: float = 0.0) -> Dict[str, int]:
  """Writes datasets.ImageDataset `data` as an image folder at `directory` (see the module doc).

  Args:
    directory: a new or empty folder.
    data: the dataset (datasets.load_dataset).
    labeled_per_class: labeled images of each class.
    validation_size: training images written to validation/ (0: no validation/).
    split_seed: the seed of the label and validation split (splits.make_splits).
    max_unlabeled: write at most this many unlabeled images (the lowest indices); None: all.
    max_test: write at most this many test images (a class-balanced subset,
      splits.subset_indices); None: all; 0: no test/.
    classes, unlabeled_size, foreign_share: class mismatch (see the module doc), checked and
      drawn as build_ssl_data's settings of the same names (ssl_data_settings.py).

  Returns:
    {folder: images written}.
  """
  errors.check_number('--labeled_per_class', labeled_per_class, integer=True, low=1)
  errors.check_number('--max_unlabeled', max_unlabeled, integer=True, low=0, optional=True)
  errors.check_number('--max_test', max_test, integer=True, low=0, optional=True)
  if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
    raise errors.UserError(f'{directory} exists and is not an empty folder; choose a new '
                           '--output folder')
  spec = dataset_specs.REGISTRY[data.name]
  # The settings checked as build_ssl_data checks them, before anything is written.
  settings = ssl_data_settings.BuildSslData(
      dataset=data.name, num_labeled=labeled_per_class, validation_size=validation_size,
      split_seed=split_seed, classes=None if classes is None else tuple(classes),
      unlabeled_size=unlabeled_size, foreign_share=foreign_share)
  known = np.arange(data.num_classes)
  if classes is not None:
    known = np.array([spec.class_names.index(c) if isinstance(c, str) else int(c)
                      for c in classes])
  # The run's classes' training images, indexed into train (the split's indices map back).
  train_known = np.flatnonzero(np.isin(data.train_labels, known))
  relabel = np.full(data.num_classes, -1, np.int64)
  relabel[known] = np.arange(len(known))
  split = splits_lib.make_splits(relabel[data.train_labels[train_known]], len(known),
                                 labeled_per_class * len(known), validation_size, split_seed)
  labeled, validation = train_known[split.labeled], train_known[split.validation]
  unlabeled = np.setdiff1d(train_known[split.unlabeled], labeled)
  if unlabeled_size is not None:
    foreign = np.flatnonzero(~np.isin(data.train_labels, known))
    # ssl_data's draw: its own images may include labeled ones, which the folder counts as
    # unlabeled already (image_folder.py), so they are not written twice.
    own, drawn = ssl_data.fixed_unlabeled(split.unlabeled, len(foreign), settings)
    unlabeled = np.sort(np.concatenate([np.setdiff1d(train_known[own], labeled),
                                        foreign[drawn]]))
  unlabeled = unlabeled[:max_unlabeled]
  class_folders = [folder_name(name) for name in spec.class_names]
  test = np.flatnonzero(np.isin(data.test_labels, known))
  test = test[splits_lib.subset_indices(data.test_labels[test], max_test)]
  os.makedirs(os.path.join(directory, image_folder.UNLABELED), exist_ok=True)
  written = {}
  for folder, images, indices, labels, prefix in (
      (image_folder.LABELED, data.train_images, labeled, data.train_labels, 'train'),
      (image_folder.UNLABELED, data.train_images, unlabeled, None, 'train'),
      (image_folder.VALIDATION, data.train_images, validation, data.train_labels,
       'train'),
      (image_folder.TEST, data.test_images, test, data.test_labels, 'test')):
    written[folder] = _write(directory, folder, images, indices, labels, prefix,
                             class_folders)
  return written
