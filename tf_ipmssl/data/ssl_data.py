"""The data of one SSL run: a dataset cut into labeled, unlabeled, validation and test.

`build_ssl_data` is the boundary between the data layer and the trainer
(docs/algorithm.md#data-and-model-selection): it loads a dataset (`datasets.load_dataset`),
optionally shrinks it for smoke runs, brings it to the networks' input size and applies the
label split (`splits.make_splits`); or it reads a folder of the user's own images, whose
labels are all given (`dataset='image_folder'`, image_folder.py).

STL-10 has a split of 100,000 images without labels, which follows train minus validation in
the unlabeled stream, and 10 predefined folds of 1,000 labeled training images: with
`stl10_fold` = k the labels come from fold k only (all of it for num_labeled=None) and
validation from the train images outside it; with None, from the whole train split as for
the other datasets. Its images stay uint8, as every dataset's, until a batch is made
(pipelines.py); the unlabeled stream of 105,000 - validation images is 2.9 GB.

The input size S is `image_size` (`image_size_of`: one of dataset_specs.IMAGE_SIZES, by
default the dataset's own: 32 for the paper's datasets and image folders, 96 for STL-10).
At the dataset's own size
its images are kept as stored (Fashion-MNIST's 28x28 are padded into 32x32 later, by
pipelines.to_model_input); at another, each is brought to SxS by the image folders' rule,
image_rules.fit_images (short side to S, bilinear and antialiased, centre crop), once, here,
and the run's export applies the same rule to the images it serves.
Its settings are gin's `build_ssl_data.*`, `BuildSslData` (ssl_data_settings.py, whose
names this module also gives: BuildSslData, GROUP, image_size_of), read into the run
configuration (training/run_config.py), which passes them here.
"""
import dataclasses
from typing import Optional, Tuple

import numpy as np

from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets
from tf_ipmssl.data import splits as splits_lib
from tf_ipmssl.data import ssl_data_settings

# The settings (ssl_data_settings.py), by this module's names too: the data's API.
BuildSslData = ssl_data_settings.BuildSslData
GROUP = ssl_data_settings.GROUP
image_size_of = ssl_data_settings.image_size_of

# Images fitted to another size per call of image_rules.fit_images: bounds its float copy.
FIT_CHUNK = 1024
# Seed of the `max_*_examples` subsets. Fixed, not the split seed: a shrunken dataset is
# the same dataset for every label split drawn from it.
SUBSET_SEED = 0


@dataclasses.dataclass(frozen=True, eq=False)
class SSLData:
  """Arrays of one SSL run. Images uint8 [N, H, W, C] (native size), labels int64 [N].

  Attributes:
    name: dataset name.
    num_classes: K.
    image_shape: (H, W, C) of the arrays: the dataset's native shape at its own image size
      (before `pipelines.to_model_input` pads 28x28 to 32x32), else (S, S, C) for the
      image size S.
    labeled_images, labeled_labels: the labeled examples (num_labeled of them; with an
      STL-10 fold and num_labeled None, the fold's).
    unlabeled_images: train minus validation (the labeled examples included), followed by
      the dataset's split of images without labels where it has one (STL-10's).
    validation_images, validation_labels: held out of train for model selection.
    test_images, test_labels: the test split, for the reported error rate.
    splits: indices of the three train subsets into the (possibly shrunken) train split
      (the unlabeled split of STL-10 is not indexed: it follows splits.unlabeled in
      unlabeled_images).
    source: where the dataset was loaded from.
    num_labeled: the labeled examples asked for (None: the whole train split minus
      validation, labeled).
    split_seed: the seed of the label/validation split.
    class_names: the name of each class, by index.
    resizes_images: whether images of any size are brought to image_shape by
      image_rules.fit_images (an image folder, or a dataset at another size than its own;
      the export then applies it in its graph).
  """
  name: str
  num_classes: int
  image_shape: Tuple[int, int, int]
  labeled_images: np.ndarray
  labeled_labels: np.ndarray
  unlabeled_images: np.ndarray
  validation_images: np.ndarray
  validation_labels: np.ndarray
  test_images: np.ndarray
  test_labels: np.ndarray
  splits: splits_lib.SplitIndices
  source: str
  num_labeled: Optional[int] = None
  split_seed: int = 0
  class_names: Tuple[str, ...] = ()
  resizes_images: bool = False
  # Of unlabeled_images, how many are of classes outside the run's (build_ssl_data.classes).
  foreign_unlabeled: int = 0
  # The test images of the dataset's other classes (build_ssl_data.classes), None otherwise.
  foreign_test_images: Optional[np.ndarray] = None

  def counts(self) -> dict:
    """Images per class of the labeled, validation and test splits (in label order), the
    unlabeled images and how many of them are of other classes: what dataset.json records."""
    def per_class(labels):
      return [int(n) for n in np.bincount(np.asarray(labels, np.int64),
                                          minlength=self.num_classes)]
    return {'labeled': per_class(self.labeled_labels),
            'validation': per_class(self.validation_labels),
            'test': per_class(self.test_labels),
            'unlabeled': int(len(self.unlabeled_images)),
            'foreign_unlabeled': int(self.foreign_unlabeled)}


def _shrink(images, labels, max_examples):
  """The `splits.subset_indices` subset of (images, labels); no copy when None."""
  if max_examples is None:
    return images, labels
  keep = splits_lib.subset_indices(labels, max_examples, SUBSET_SEED)
  return images[keep], labels[keep]


def build_ssl_data(settings: BuildSslData) -> SSLData:
  """Loads `settings.dataset` and splits its training set for semi-supervised learning.

  Args:
    settings: its BuildSslData settings.

  Returns:
    SSLData.

  Raises:
    ConfigError: no dataset bound, an unknown source, include_extra where the dataset has
      no extra split, a fold of a copy without folds (TFDS's); the settings' own values
      were checked when they were made.
    SplitError: impossible num_labeled / validation_size.
    DatasetNotFoundError: the dataset is nowhere to be found.
    UserError: an image folder that cannot be read as image_folder.py says.
  """
  if settings.dataset is None:
    raise errors.ConfigError("bind build_ssl_data.dataset, e.g. to 'fashion_mnist'")
  image_size = image_size_of(settings.dataset, settings.image_size)
  if settings.dataset == dataset_specs.IMAGE_FOLDER:
    # Imported here: it imports TensorFlow, which this module does not need otherwise.
    from tf_ipmssl.data import image_folder  # pylint: disable=g-import-not-at-top
    return _folder_data(
        image_folder.read_image_folder(settings.data_dir, settings.channels, image_size),
        settings.split_seed, settings.validation_per_class)
  data = datasets.load_dataset(settings.dataset, source=settings.source,
                               data_dir=settings.data_dir,
                               include_extra=settings.include_extra, download=settings.download)
  _check_copy_has_folds(settings, data)
  arrays = _subset(data, settings)
  resizes = image_size != dataset_specs.REGISTRY[data.name].image_size
  if resizes:
    arrays = _fitted_arrays(arrays, image_size)
  class_names = dataset_specs.REGISTRY[data.name].class_names
  num_classes, foreign_test_images = data.num_classes, None
  foreign = None
  if settings.classes is not None:
    known = [_class_index(c, class_names) for c in settings.classes]
    arrays, foreign, foreign_test_images = _known_classes(arrays, known)
    class_names, num_classes = tuple(class_names[c] for c in known), len(known)
  split = _split(arrays, num_classes, settings)
  drawn_foreign = np.zeros([0], np.int64)
  if settings.unlabeled_size is not None:
    split, drawn_foreign = _fixed_unlabeled(split, foreign, settings)
  unlabeled_images = arrays.train_images[split.unlabeled]
  if len(drawn_foreign):
    # After the run's own: the unlabeled stream shuffles them together.
    unlabeled_images = np.concatenate([unlabeled_images, foreign[drawn_foreign]])
  if arrays.extra_images is not None:
    # Train minus validation, then the unlabeled split: one uint8 array, the stream the
    # critic samples (the split is briefly held twice, here).
    unlabeled_images = np.concatenate([unlabeled_images, arrays.extra_images])
  return SSLData(
      name=data.name,
      num_classes=num_classes,
      image_shape=((image_size, image_size, data.image_shape[-1]) if resizes
                   else data.image_shape),
      labeled_images=arrays.train_images[split.labeled],
      labeled_labels=arrays.train_labels[split.labeled],
      unlabeled_images=unlabeled_images,
      validation_images=arrays.train_images[split.validation],
      validation_labels=arrays.train_labels[split.validation],
      test_images=arrays.test_images,
      test_labels=arrays.test_labels,
      splits=split,
      source=_source_of(data.source, settings, arrays),
      num_labeled=settings.num_labeled,
      split_seed=settings.split_seed,
      class_names=class_names,
      resizes_images=resizes,
      foreign_unlabeled=len(drawn_foreign),
      foreign_test_images=foreign_test_images)


@dataclasses.dataclass(frozen=True)
class _Arrays:
  """A loaded dataset's arrays as the run keeps them: train, test, the split without labels
  (or None) and the STL-10 fold the labels come from (indices into train, or None)."""
  train_images: np.ndarray
  train_labels: np.ndarray
  test_images: np.ndarray
  test_labels: np.ndarray
  extra_images: Optional[np.ndarray]
  fold: Optional[np.ndarray]


def _check_copy_has_folds(settings, data) -> None:
  """A ConfigError for an stl10_fold of a copy of the dataset that keeps no folds."""
  if settings.stl10_fold is not None and data.folds is None:
    raise errors.ConfigError(
        f'build_ssl_data.stl10_fold = {settings.stl10_fold}, but the copy of '
        f'{settings.dataset} found ({data.source}) has no folds: TFDS keeps neither fold_indices.txt nor the '
        "original order of train. Put the original stl10_binary/ files where they are "
        "looked for (BUILD.md), or bind build_ssl_data.stl10_fold = None to draw the labels "
        'from the whole train split')


def _subset(data, settings) -> _Arrays:
  """`data`'s arrays, each split cut to its `max_*_examples` (the fold renumbered into the
  subset)."""
  keep = (None if settings.max_train_examples is None else
          splits_lib.subset_indices(data.train_labels, settings.max_train_examples,
                                    SUBSET_SEED))
  train_images, train_labels = ((data.train_images, data.train_labels) if keep is None else
                                (data.train_images[keep], data.train_labels[keep]))
  test_images, test_labels = _shrink(data.test_images, data.test_labels,
                                     settings.max_test_examples)
  extra_images = data.unlabeled_images
  if extra_images is not None and settings.max_train_examples is not None:
    extra_images = _shrink(extra_images, np.zeros(len(extra_images), np.int64),
                           settings.max_train_examples)[0]
  fold = None if settings.stl10_fold is None else data.folds[settings.stl10_fold]
  if fold is not None and keep is not None:
    fold = np.flatnonzero(np.isin(keep, fold))  # Its images in the subset, renumbered.
  return _Arrays(train_images, train_labels, test_images, test_labels, extra_images, fold)


def _fitted_arrays(arrays: _Arrays, size: int) -> _Arrays:
  """`arrays` with every image brought to size x size (`_fitted`)."""
  return dataclasses.replace(
      arrays, train_images=_fitted(arrays.train_images, size),
      test_images=_fitted(arrays.test_images, size),
      extra_images=(None if arrays.extra_images is None
                    else _fitted(arrays.extra_images, size)))


def _split(arrays: _Arrays, num_classes: int, settings) -> splits_lib.SplitIndices:
  """The label split of train (splits.make_splits); a SplitError that also names the fold
  and the subset where they narrowed the choice."""
  labeled_counts = settings.labeled_per_class
  try:
    if settings.imbalance_ratio is not None:
      labeled_counts = splits_lib.geometric_counts(settings.num_labeled, num_classes,
                                                   settings.imbalance_ratio)
    if labeled_counts is not None and len(labeled_counts) != num_classes:
      raise errors.SplitError(
          f'build_ssl_data.labeled_per_class lists {len(labeled_counts)} counts for '
          f'{num_classes} classes; list one count per class, in label order.')
    return splits_lib.make_splits(arrays.train_labels, num_classes, settings.num_labeled,
                                  settings.validation_size, settings.split_seed,
                                  labeled_pool=arrays.fold, labeled_counts=labeled_counts,
                                  unlabeled_profile=settings.imbalanced_unlabeled,
                                  validation_per_class=settings.validation_per_class)
  except errors.SplitError as e:
    notes = []
    if arrays.fold is not None:
      notes.append('(The labels come from fold build_ssl_data.stl10_fold = '
                   f'{settings.stl10_fold}; stl10_fold = None draws them from the whole '
                   'train split.)')
    if settings.max_train_examples is not None:
      notes.append('(The training split was cut to '
                   f'max_train_examples={settings.max_train_examples}; raising it is another '
                   'fix.)')
    if not notes:
      raise
    raise errors.SplitError(' '.join([str(e)] + notes)) from e


def _class_index(value, class_names) -> int:
  """A class of build_ssl_data.classes (an index or a name) as its index."""
  if isinstance(value, str):
    return list(class_names).index(value)
  return int(value)


def _known_classes(arrays: _Arrays, known):
  """`arrays` with train and test cut to the `known` classes, relabelled 0..K'-1 in that
  order; train's images of the other classes and the other classes' test images."""
  relabel = np.full(int(max(arrays.train_labels.max(), arrays.test_labels.max())) + 1, -1,
                    np.int64)
  relabel[known] = np.arange(len(known))
  train_known = relabel[arrays.train_labels] >= 0
  test_known = relabel[arrays.test_labels] >= 0
  cut = dataclasses.replace(
      arrays, train_images=arrays.train_images[train_known],
      train_labels=relabel[arrays.train_labels[train_known]],
      test_images=arrays.test_images[test_known],
      test_labels=relabel[arrays.test_labels[test_known]])
  return cut, arrays.train_images[~train_known], arrays.test_images[~test_known]


def _fixed_unlabeled(split, foreign, settings):
  """The split with its unlabeled set drawn at build_ssl_data.unlabeled_size, and the
  indices into `foreign` (train images of the other classes, or None) drawn beside it
  (fixed_unlabeled)."""
  own, drawn = fixed_unlabeled(split.unlabeled, 0 if foreign is None else len(foreign),
                               settings)
  return dataclasses.replace(split, unlabeled=own), drawn


def fixed_unlabeled(unlabeled, available, settings):
  """The unlabeled set of build_ssl_data.unlabeled_size: (the examples kept of `unlabeled`,
  the indices drawn among `available` images of the other classes), a share foreign_share of
  the size from the latter, each a prefix of its own seeded permutation, drawn apart from the
  label split (which stays the one without a fixed size, whatever the share)."""
  size = settings.unlabeled_size
  num_foreign = int(round(settings.foreign_share * size))
  num_known = size - num_foreign
  for name, count, pool in (('of the run\'s classes', num_known, len(unlabeled)),
                            ('of the other classes', num_foreign, available)):
    if count > pool:
      raise errors.SplitError(
          f'build_ssl_data.unlabeled_size={size} with foreign_share={settings.foreign_share} '
          f'asks for {count} unlabeled images {name}, but there are only {pool}; lower '
          'unlabeled_size (or move foreign_share).')
  rng = np.random.Generator(np.random.PCG64([settings.split_seed, 1]))
  own = np.sort(rng.permutation(unlabeled)[:num_known]).astype(np.int64)
  drawn = np.sort(rng.permutation(available)[:num_foreign]).astype(np.int64)
  return own, drawn


def _source_of(source: str, settings, arrays: _Arrays) -> str:
  """Where the data came from, with the subset's sizes where the splits were cut."""
  if settings.max_train_examples is None and settings.max_test_examples is None:
    return source
  unlabeled = '' if arrays.extra_images is None else f', {len(arrays.extra_images)} unlabeled'
  return (f'{source} (subset: {len(arrays.train_labels)} train, {len(arrays.test_labels)} '
          f'test{unlabeled} examples)')


def _fitted(images, size):
  """uint8 images [N, H, W, C] brought to [N, size, size, C] by image_rules.fit_images,
  FIT_CHUNK at a time."""
  # Imported here: it imports TensorFlow, which this module does not need otherwise.
  from tf_ipmssl.data import image_rules  # pylint: disable=g-import-not-at-top
  fitted = np.empty([len(images), size, size, images.shape[-1]], np.uint8)
  for start in range(0, len(images), FIT_CHUNK):
    chunk = images[start:start + FIT_CHUNK]
    fitted[start:start + len(chunk)] = image_rules.fit_images(chunk, size).numpy()
  return fitted


def _folder_data(folder, split_seed, validation_per_class=None) -> SSLData:
  """The SSLData of an image_folder.ImageFolder: train is the labeled images, then those of
  unlabeled/. With validation_per_class, that many images of each class of labeled/ are held
  out as validation (drawn with split_seed; the folder has no validation/), and leave the
  labeled and the unlabeled set."""
  arrays = dict(folder.arrays)
  num_labeled = len(arrays['labeled_labels'])
  labeled = np.arange(num_labeled, dtype=np.int64)
  validation = np.zeros([0], np.int64)
  unlabeled = np.arange(len(arrays['unlabeled_images']), dtype=np.int64)
  if validation_per_class is not None:
    if len(arrays['validation_labels']):
      raise errors.ConfigError(
          f'{folder.source} has its own validation/ folder: leave '
          'build_ssl_data.validation_per_class unbound (or move validation/ away to hold '
          'images out of labeled/)')
    split = splits_lib.make_splits(np.asarray(arrays['labeled_labels'], np.int64),
                                   len(folder.class_names), None, 0, split_seed,
                                   validation_per_class=validation_per_class)
    labeled, validation = split.unlabeled, split.validation
    arrays['validation_images'] = arrays['labeled_images'][validation]
    arrays['validation_labels'] = arrays['labeled_labels'][validation]
    arrays['labeled_images'] = arrays['labeled_images'][labeled]
    arrays['labeled_labels'] = arrays['labeled_labels'][labeled]
    # unlabeled_images begins with labeled/'s images (image_folder.py): those held out leave.
    unlabeled = np.setdiff1d(unlabeled, validation)
    arrays['unlabeled_images'] = arrays['unlabeled_images'][unlabeled]
  return SSLData(
      name=dataset_specs.IMAGE_FOLDER,
      num_classes=len(folder.class_names),
      image_shape=folder.image_shape,
      **arrays,
      splits=splits_lib.SplitIndices(labeled=labeled, validation=validation,
                                     unlabeled=unlabeled),
      source=folder.source,
      num_labeled=None,
      split_seed=split_seed,
      class_names=folder.class_names,
      resizes_images=True)
