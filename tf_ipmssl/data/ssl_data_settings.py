"""The settings of a run's data, `build_ssl_data.*` in gin (BuildSslData), and their checks:
a value of the wrong type, range or choice, or a combination that cannot be built, is one
ConfigError naming the binding and the fix, raised when the settings are made (before any
data is read). ssl_data.build_ssl_data builds the data they describe.
"""
import dataclasses
from typing import Optional, Tuple

import numpy as np

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets


def _check_max_examples(name: str, value):
  if value is None:
    return
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
    raise errors.ConfigError(
        f'{name}={value!r} must be a positive integer, or None for the whole split.')


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
  # examples (seeded with ssl_data.SUBSET_SEED, see `splits.subset_indices`) before
  # splitting, and at most this many of an unlabeled split (STL-10's; a fold keeps those of
  # its images in the subset). None keeps all; results on a subset are not the paper's
  # numbers.
  max_train_examples: Optional[int] = None
  # Likewise for the test split.
  max_test_examples: Optional[int] = None
  # Image folders only: 1 (grayscale), 3 (colour) or None (from the images).
  channels: Optional[int] = None
  # The networks' input size S, one of dataset_specs.IMAGE_SIZES (32, 64, 96); None: the dataset's
  # own (dataset_specs.default_image_size: 32, STL-10's 96). The run's configuration holds it
  # resolved (`image_size_of`); ssl_data.py's module doc says how the images are brought
  # to it.
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


# build_ssl_data.* in gin: its settings, read into the run configuration (run_config.py).
GROUP = builder_settings.Group.of_dataclass('build_ssl_data', BuildSslData)
