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
image_folder.fit_images (short side to S, bilinear and antialiased, centre crop), once, here,
and the run's export applies the same rule to the images it serves.
Its settings are gin's `build_ssl_data.*`, read into the run configuration
(training/run_config.py), which passes them here.
"""
import dataclasses
from typing import Optional, Tuple

import numpy as np

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets
from tf_ipmssl.data import splits as splits_lib

# Images fitted to another size per call of image_folder.fit_images: bounds its float copy.
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
      image_folder.fit_images (an image folder, or a dataset at another size than its own;
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


def _check_max_examples(name: str, value):
  if value is None:
    return
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
    raise errors.ConfigError(
        f'{name}={value!r} must be a positive integer, or None for the whole split.')


def _shrink(images, labels, max_examples):
  """The `splits.subset_indices` subset of (images, labels); no copy when None."""
  if max_examples is None:
    return images, labels
  keep = splits_lib.subset_indices(labels, max_examples, SUBSET_SEED)
  return images[keep], labels[keep]


@dataclasses.dataclass(frozen=True)
class BuildSslData:
  """The data's settings, `build_ssl_data.*` in gin."""
  # A name of `dataset_specs.REGISTRY` ('cifar10', 'svhn', 'fashion_mnist', 'stl10'), or
  # 'image_folder': the user's images in data_dir (image_folder.py), where num_labeled and
  # validation_size must be None and 0 (gin/bases/image_folder.gin), split_seed chooses nothing
  # and source, include_extra, download and max_*_examples do not apply.
  dataset: Optional[str] = None
  # 'auto', 'local' or 'tfds' (see `datasets.load_dataset`).
  source: str = 'auto'
  # Directory searched first for the data (also TFDS's data_dir).
  data_dir: Optional[str] = None
  # Labels in total, num_labeled / K per class; None labels every non-validation example (the
  # supervised all-labels baseline), or with stl10_fold every image of the fold.
  num_labeled: Optional[int] = 4000
  # Training examples held out for validation (0 for none); with stl10_fold, drawn from the train
  # images outside the fold (at most 4,000).
  validation_size: int = 5000
  # The label-split seed, part of a run's identity.
  split_seed: int = 0
  # SVHN only: append the 'extra' examples to train.
  include_extra: bool = False
  # Let TFDS download the dataset if it is not found.
  download: bool = False
  # For quick CPU smoke runs only: keep a class-balanced subset of at most this many training
  # examples (seeded with SUBSET_SEED, see `splits.subset_indices`) before splitting, and at most
  # this many of an unlabeled split (STL-10's; a fold keeps those of its images in the subset).
  # None keeps all; results on a subset are not the paper's numbers.
  max_train_examples: Optional[int] = None
  # Likewise for the test split.
  max_test_examples: Optional[int] = None
  # Image folders only: 1 (grayscale), 3 (colour) or None (from the images).
  channels: Optional[int] = None
  # The networks' input size S, one of dataset_specs.IMAGE_SIZES (32, 64, 96); None: the dataset's
  # own (dataset_specs.default_image_size: 32, STL-10's 96). The run's configuration holds it
  # resolved (`image_size_of`); the module doc says how the images are brought to it.
  image_size: Optional[int] = None
  # STL-10 only: the predefined fold (0-9, from the original files' fold_indices.txt; TFDS keeps
  # none) the labels come from; None: the whole train split, as for the other datasets.
  stl10_fold: Optional[int] = None
  # An imbalanced labeled set: num_labeled labels on a geometric profile over the classes, the
  # first class with this many times the last one's (splits.geometric_counts). None: balanced.
  imbalance_ratio: Optional[float] = None
  # Or the labeled examples of each class, in label order (num_labeled None or their sum).
  labeled_per_class: Optional[Tuple[int, ...]] = None
  # With imbalance_ratio or labeled_per_class: cut the unlabeled set to the labels' profile
  # (True; splits.profile_counts) or leave it as the dataset has it (False). Test is untouched.
  imbalanced_unlabeled: bool = True
  # The validation examples of each class, in place of validation_size (bind that to 0); for an
  # image folder without validation/, held out of labeled/.
  validation_per_class: Optional[int] = None
  # Class mismatch: train on these classes only (the dataset's class indices or names),
  # relabelled 0..K'-1 in this order; labeled, validation and test keep only their images.
  classes: Optional[Tuple] = None
  # The unlabeled images, a fixed number drawn from train minus validation (None: all of it).
  unlabeled_size: Optional[int] = None
  # With classes and unlabeled_size: the share of the unlabeled images drawn from the
  # dataset's other classes (0 to 1; Oliver et al. 2018's class mismatch).
  foreign_share: float = 0.0

  def __post_init__(self):
    """A ConfigError naming the binding for a value of the wrong type, range or choice (the
    dataset may be left unbound here: building the data asks for it)."""
    errors.check_number('build_ssl_data.validation_size', self.validation_size, integer=True,
                        low=0)
    errors.check_number('build_ssl_data.split_seed', self.split_seed, integer=True, low=0)
    if self.num_labeled is not None:
      errors.check_number('build_ssl_data.num_labeled', self.num_labeled, integer=True, low=1)
    _check_max_examples('max_train_examples', self.max_train_examples)
    _check_max_examples('max_test_examples', self.max_test_examples)
    _check_label_settings(self)
    if self.dataset is None:
      return
    errors.check_choice(self.dataset, datasets.DATASETS + (dataset_specs.IMAGE_FOLDER,),
                        'dataset', 'valid names')
    image_size_of(self.dataset, self.image_size)
    _check_fold(self.dataset, self.stl10_fold)
    if self.dataset == dataset_specs.IMAGE_FOLDER:
      _check_folder_settings(self)
    elif self.channels is not None:
      raise errors.ConfigError(f'build_ssl_data.channels applies to image folders only; '
                               f'{self.dataset!r} has its own: leave it unbound')
    spec = dataset_specs.REGISTRY.get(self.dataset)
    if spec is not None:
      _check_classes_of(self, spec)


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


def _check_label_settings(settings):
  """ConfigErrors for the imbalance, validation and class-mismatch settings' values and
  combinations (the dataset's classes are checked by _check_classes_of)."""
  name = 'build_ssl_data'
  if settings.imbalance_ratio is not None:
    errors.check_number(f'{name}.imbalance_ratio', settings.imbalance_ratio, low=1.0)
    if settings.num_labeled is None:
      raise errors.ConfigError(f'{name}.imbalance_ratio spreads num_labeled labels over the '
                               f'classes: bind {name}.num_labeled to a number')
    if settings.labeled_per_class is not None:
      raise errors.ConfigError(f'bind {name}.imbalance_ratio or {name}.labeled_per_class, '
                               'not both')
  if settings.labeled_per_class is not None:
    counts = settings.labeled_per_class
    if not isinstance(counts, (tuple, list)) or not counts or any(
        isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in counts):
      raise errors.ConfigError(f'{name}.labeled_per_class = {counts!r} must list a positive '
                               'count per class, in label order, e.g. (40, 20, 3)')
    if settings.num_labeled is not None and settings.num_labeled != sum(counts):
      raise errors.ConfigError(
          f'{name}.labeled_per_class sums to {sum(counts)}, but {name}.num_labeled = '
          f'{settings.num_labeled}: bind num_labeled = None (or {sum(counts)})')
  if settings.validation_per_class is not None:
    errors.check_number(f'{name}.validation_per_class', settings.validation_per_class,
                        integer=True, low=1)
    if settings.validation_size:
      raise errors.ConfigError(
          f'{name}.validation_per_class draws the validation split: bind '
          f'{name}.validation_size = 0 beside it')
  if settings.unlabeled_size is not None:
    errors.check_number(f'{name}.unlabeled_size', settings.unlabeled_size, integer=True, low=1)
    if settings.imbalanced_unlabeled and (settings.imbalance_ratio is not None or
                                          settings.labeled_per_class is not None):
      raise errors.ConfigError(
          f'{name}.unlabeled_size fixes the unlabeled set, which an imbalanced labeled set '
          f'would also cut: bind {name}.imbalanced_unlabeled = False beside it')
  errors.check_number(f'{name}.foreign_share', settings.foreign_share, low=0.0)
  if settings.foreign_share > 1:
    raise errors.ConfigError(f'{name}.foreign_share must be a share from 0 to 1, got '
                             f'{settings.foreign_share!r}')
  if settings.foreign_share and (settings.classes is None or settings.unlabeled_size is None):
    raise errors.ConfigError(
        f'{name}.foreign_share draws unlabeled images of the classes outside {name}.classes: '
        f'bind {name}.classes and {name}.unlabeled_size too')


def _check_classes_of(settings, spec):
  """ConfigErrors for build_ssl_data.classes that are not classes of dataset `spec`."""
  if settings.classes is None:
    return
  classes = settings.classes
  name = 'build_ssl_data.classes'
  if not isinstance(classes, (tuple, list)) or len(classes) < 2:
    raise errors.ConfigError(f'{name} = {classes!r} must list at least two classes (indices '
                             f'or names of {spec.name}\'s)')
  if spec.tfds_unlabeled_split:
    raise errors.ConfigError(f'{name} needs every training image labeled; {spec.name} has '
                             'images without labels: leave it unbound')
  indices = []
  for value in classes:
    if isinstance(value, str):
      if value not in spec.class_names:
        raise errors.ConfigError(f'{name}: {value!r} is no class of {spec.name}; its classes '
                                 f'are {list(spec.class_names)}')
      indices.append(spec.class_names.index(value))
    elif isinstance(value, int) and not isinstance(value, bool) and (
        0 <= value < len(spec.class_names)):
      indices.append(value)
    else:
      raise errors.ConfigError(f'{name}: {value!r} is no class of {spec.name} (0 to '
                               f'{len(spec.class_names) - 1}, or a name)')
  if len(set(indices)) != len(indices):
    raise errors.ConfigError(f'{name} = {classes!r} names a class twice')
  if len(indices) == len(spec.class_names) and settings.foreign_share:
    raise errors.ConfigError(f'{name} keeps every class of {spec.name}: no class is left to '
                             'draw foreign images from; leave some out')


def _source_of(source: str, settings, arrays: _Arrays) -> str:
  """Where the data came from, with the subset's sizes where the splits were cut."""
  if settings.max_train_examples is None and settings.max_test_examples is None:
    return source
  unlabeled = '' if arrays.extra_images is None else f', {len(arrays.extra_images)} unlabeled'
  return (f'{source} (subset: {len(arrays.train_labels)} train, {len(arrays.test_labels)} '
          f'test{unlabeled} examples)')


def _check_fold(dataset: str, stl10_fold) -> None:
  """A ConfigError unless stl10_fold is None or a fold of `dataset` (STL-10's 0-9)."""
  if stl10_fold is None:
    return
  spec = dataset_specs.REGISTRY.get(dataset)
  if spec is None or not spec.num_folds:
    with_folds = [s.name for s in dataset_specs.REGISTRY.values() if s.num_folds]
    raise errors.ConfigError(
        f'build_ssl_data.stl10_fold = {stl10_fold!r} applies to {", ".join(with_folds)} '
        f'only, not {dataset!r}: leave it unbound, or bind it to None after a gin file that '
        'binds it (such as bases/stl10.gin)')
  errors.check_number('build_ssl_data.stl10_fold', stl10_fold, integer=True, low=0,
                      high=spec.num_folds)


def image_size_of(dataset: Optional[str], image_size: Optional[int]) -> int:
  """The networks' input size of a run on `dataset`: `image_size` as bound, or the dataset's
  own (dataset_specs.default_image_size) for None; a ConfigError naming the sizes the
  networks are built for (dataset_specs.IMAGE_SIZES) for any other value."""
  if image_size is None:
    return dataset_specs.default_image_size(dataset)
  dataset_specs.check_image_size('build_ssl_data.image_size', image_size)
  return image_size


def _fitted(images, size):
  """uint8 images [N, H, W, C] brought to [N, size, size, C] by image_folder.fit_images,
  FIT_CHUNK at a time."""
  # Imported here: it imports TensorFlow, which this module does not need otherwise.
  from tf_ipmssl.data import image_folder  # pylint: disable=g-import-not-at-top
  fitted = np.empty([len(images), size, size, images.shape[-1]], np.uint8)
  for start in range(0, len(images), FIT_CHUNK):
    chunk = images[start:start + FIT_CHUNK]
    fitted[start:start + len(chunk)] = image_folder.fit_images(chunk, size).numpy()
  return fitted


def _check_folder_settings(settings):
  """ConfigErrors for settings that would choose among an image folder's images."""
  if settings.num_labeled is not None or settings.validation_size:
    raise errors.ConfigError(
        'an image folder gives every label (labeled/) and its own validation/ folder: bind '
        'build_ssl_data.num_labeled = None and build_ssl_data.validation_size = 0 (as '
        'gin/bases/image_folder.gin does, after the other gin files)')
  given = {'source': settings.source not in ('auto', 'local'),
           'include_extra': settings.include_extra, 'download': settings.download,
           'max_train_examples': settings.max_train_examples is not None,
           'max_test_examples': settings.max_test_examples is not None,
           'imbalance_ratio': settings.imbalance_ratio is not None,
           'labeled_per_class': settings.labeled_per_class is not None,
           'classes': settings.classes is not None,
           'unlabeled_size': settings.unlabeled_size is not None}
  bound = [name for name, value in given.items() if value]
  if bound:
    raise errors.ConfigError(
        f'build_ssl_data.{bound[0]} does not apply to an image folder; leave it unbound')


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


# build_ssl_data.* in gin: its settings, read into the run configuration (run_config.py).
GROUP = builder_settings.Group.of_dataclass('build_ssl_data', BuildSslData)
