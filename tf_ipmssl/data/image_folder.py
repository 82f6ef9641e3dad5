"""A folder of the user's own images as a dataset (`build_ssl_data.dataset = 'image_folder'`).

Layout of `build_ssl_data.data_dir`:

  labeled/<class name>/*     the labeled images; the class names are these folders' names,
                             sorted (class index i is the i-th name)
  unlabeled/*                the unlabeled images, at any depth (may be empty)
  validation/<class name>/*  optional: labeled images held out for model selection
  test/<class name>/*        optional: labeled images for the reported test error

Images are PNG, JPEG, BMP, GIF or WebP files, the formats TensorFlow decodes, each by one
rule (image_rules.py: `decode`, DECODING_RULE): JPEGs with the accurate integer IDCT, so that
Pillow and libjpeg users get the same pixels; the first frame of an animated GIF; an animated
WebP is refused, as TensorFlow's decoder cannot read one safely. Inside a class folder they
may lie at any depth.
Hidden files and folders (names starting with '.') are skipped; any other file must be a
readable image. The validation and test folders may hold fewer classes than labeled/, not
others.

Symbolic links are followed, and each real file (os.path.realpath) is read once: a link to a
folder it lies in (a loop, such as `up -> ..`) is not followed, and a folder or file reached
twice inside one folder (a class folder, or unlabeled/) counts once, at the first path the
walk reaches it by (`list_files`). One file in two folders (two classes, or labeled/ and
unlabeled/, validation/ or test/) is refused: its label or split would be ambiguous.

Every image is brought to the critic's input size S (`build_ssl_data.image_size`: 32 unless
bound, or 64 or 96) by one rule, `image_rules.fit_images`: resize (bilinear, antialiased) so
that its short side is S pixels, then crop the centre SxS, rounding to uint8.
The exported classifier of such a run applies the same rule in its graph, so that it takes
images of any size. Channels: `channels=1` (grayscale) or 3 (colour) as bound, else 1 when
every image is grayscale and 3 otherwise (grayscale images then repeated into three channels);
an alpha channel is dropped. A bound channel count is a statement about the images: a folder
with images of another channel count is refused (GIFs decode as colour).

As with the built-in datasets, the labeled images also count as unlabeled. The labels are all
given: `num_labeled`, `validation_size` and the subsets of `build_ssl_data` do not apply, and
the split seed chooses nothing. Without validation/, the run selects no step (selecting on the
labeled images it trains on would pick the most overfitted one): it reports and exports the
last step's classifier.

Everything is checked before a run writes anything (the memory check before any image is
decoded); each problem is one `errors.UserError` line naming the fix: missing labeled/ or unlabeled/, a class with no image,
fewer than two classes, a validation/ or test/ class that labeled/ lacks, one file in two
folders through a link, files that are not readable images or are animated WebPs (the first
named, with how many more), a channel count other than the bound one, and a folder whose
decoded images would not fit in memory.
"""
import dataclasses
import os
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import quiet_import
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import image_rules
from tf_ipmssl.data import pipelines

NAME = dataset_specs.IMAGE_FOLDER
LABELED, UNLABELED, VALIDATION, TEST = 'labeled', 'unlabeled', 'validation', 'test'
CHANNELS = (None, 1, 3)
# The part of the available memory the decoded images may take: a run holds them more than
# once (the arrays, the labeled images again among the unlabeled, the pipelines' tensors).
MEMORY_FRACTION = 0.25


def _visible(names):
  return sorted(n for n in names if not n.startswith('.'))


def _visible_entries(directory):
  """The entries of `directory` not hidden, sorted by name; none where it cannot be read (as
  os.walk skips such a folder)."""
  try:
    with os.scandir(directory) as entries:
      return sorted((e for e in entries if not e.name.startswith('.')), key=lambda e: e.name)
  except OSError:
    return []


def _is_folder(entry):
  try:
    return entry.is_dir()  # Through a link, to what it points to.
  except OSError:
    return False


def _holds(folder, path):
  """Whether real path `path` is the real folder `folder` or lies inside it."""
  return os.path.commonpath([folder, path]) == folder


def _walk(directory) -> Iterator[Tuple[str, str]]:
  """(path, real path) of every visible file under `directory`, depth first through each
  folder's entries in sorted order, following symbolic links; each real folder is entered
  once, and a link to a folder that holds a folder of the walk (a loop) not at all."""
  top = os.path.realpath(directory)
  entered = {top}
  # Per open folder: its remaining entries, and the real paths of the folders down to it.
  stack = [(iter(_visible_entries(directory)), (top,))]
  while stack:
    entries, reals = stack[-1]
    entry = next(entries, None)
    if entry is None:
      stack.pop()
      continue
    real = (os.path.realpath(entry.path) if entry.is_symlink()
            else os.path.join(reals[-1], entry.name))
    if not _is_folder(entry):
      yield entry.path, real
    elif real not in entered and not any(_holds(real, r) for r in reals):
      entered.add(real)
      stack.append((iter(_visible_entries(entry.path)), reals + (real,)))


def real_files(directory) -> Dict[str, str]:
  """{path: real path} of every file under `directory` at any depth (see list_files), sorted
  by path."""
  first_path = {}
  for path, real in _walk(directory):
    first_path.setdefault(real, path)
  return dict(sorted((path, real) for real, path in first_path.items()))


def list_files(directory) -> List[str]:
  """Every file under `directory` at any depth, hidden ones skipped, sorted.

  Symbolic links are followed, but each real folder is walked once and each real file (by
  os.path.realpath) listed once, at the first path the walk reaches it by: the walk goes
  depth first through each folder's entries in sorted name order. A link to a folder it lies
  in (a loop, such as `up -> ..`, or a link to a folder above `directory`) is not followed,
  as `find -L` does not.
  """
  return list(real_files(directory))


@dataclasses.dataclass(frozen=True, eq=False)
class ImageFolder:
  """A folder's images as arrays, by the name of the ssl_data.SSLData field each becomes:
  'labeled_images', 'unlabeled_images', 'validation_images', 'test_images' (uint8
  [N, S, S, C], S the size read at) and 'labeled_labels', 'validation_labels', 'test_labels' (int64 [N], class
  indices). The unlabeled images are the labeled ones first, then those of unlabeled/.
  """
  class_names: Tuple[str, ...]
  arrays: Dict[str, np.ndarray]
  source: str

  @property
  def image_shape(self) -> Tuple[int, int, int]:
    return tuple(self.arrays['labeled_images'].shape[1:])


def _shown(data_dir, path):
  return os.path.join(data_dir, os.path.relpath(path, data_dir))


def _class_files(data_dir, folder, required) -> Optional[Dict[str, Dict[str, str]]]:
  """{class name: its files, {path: real path}} of `folder` (labeled/, validation/ or test/);
  None when an optional folder is absent."""
  directory = os.path.join(data_dir, folder)
  if not os.path.isdir(directory):
    if required:
      raise errors.UserError(
          f'{data_dir} has no {folder}/ folder; an image folder holds labeled/<class name>/ '
          'with the labeled images and unlabeled/ with the others (see '
          'tf_ipmssl/data/image_folder.py)')
    return None
  entries = _visible(os.listdir(directory))
  loose = [e for e in entries if not os.path.isdir(os.path.join(directory, e))]
  if loose:
    raise errors.UserError(
        f'{os.path.join(data_dir, folder, loose[0])} lies directly in {folder}/, where only '
        f'class folders belong ({folder}/<class name>/{loose[0]}); move it into its class '
        'folder')
  classes = {name: real_files(os.path.join(directory, name)) for name in entries}
  for name, files in classes.items():
    if not files:
      raise errors.UserError(
          f'the class folder {os.path.join(data_dir, folder, name)} holds no image; add '
          'images or remove the folder')
  return classes


def _layout(data_dir):
  """(class names, [(folder, files, labels)]) of the folder, its layout checked."""
  if data_dir is None:
    raise errors.ConfigError("bind build_ssl_data.data_dir to your image folder, e.g. "
                             "build_ssl_data.data_dir = 'my_images'")
  if not os.path.isdir(data_dir):
    raise errors.UserError(f'the image folder {data_dir} does not exist; bind '
                           'build_ssl_data.data_dir to a folder holding labeled/ and unlabeled/')
  labeled = _class_files(data_dir, LABELED, required=True)
  if len(labeled) < 2:
    raise errors.UserError(
        f'{os.path.join(data_dir, LABELED)} holds {len(labeled)} class folder(s); a classifier '
        'needs at least two (labeled/<class name>/ for each class)')
  class_names = tuple(labeled)  # Sorted by _visible.
  unlabeled_dir = os.path.join(data_dir, UNLABELED)
  if not os.path.isdir(unlabeled_dir):
    raise errors.UserError(
        f'{data_dir} has no {UNLABELED}/ folder; put the unlabeled images there (at any '
        'depth), or create it empty to train on the labeled images alone')
  parts = [(LABELED, labeled), (UNLABELED, {None: real_files(unlabeled_dir)})]
  for folder in (VALIDATION, TEST):
    classes = _class_files(data_dir, folder, required=False)
    if classes is None:
      continue
    foreign = [name for name in classes if name not in class_names]
    if foreign:
      raise errors.UserError(
          f'{os.path.join(data_dir, folder, foreign[0])} is a class that '
          f'{os.path.join(data_dir, LABELED)} lacks (its classes: {", ".join(class_names)}); '
          'rename or remove the folder, or add labeled images of that class')
    parts.append((folder, classes))
  _refuse_files_in_two_folders(data_dir, [files for _, classes in parts
                                          for files in classes.values()])
  listed = []
  for folder, classes in parts:
    files, labels = [], []
    for name, paths in classes.items():
      files += list(paths)
      labels += [-1 if name is None else class_names.index(name)] * len(paths)
    listed.append((folder, files, np.asarray(labels, np.int64)))
  return class_names, listed


def _refuse_files_in_two_folders(data_dir, folders: List[Dict[str, str]]):
  """Refuses a real file that two folders (each {path: real path}) both hold, through a
  symbolic link: its class or split would be ambiguous."""
  first = {}  # real path -> (its first path, the index of the folder holding it)
  for index, files in enumerate(folders):
    for path, real in files.items():
      first_path, first_index = first.setdefault(real, (path, index))
      if first_index != index:
        raise errors.UserError(
            f'{_shown(data_dir, path)} is the same file as {_shown(data_dir, first_path)} '
            '(through a symbolic link), in another folder; an image belongs in one folder (the '
            'labeled images count as unlabeled already): remove the link')


def available_memory_bytes() -> Optional[int]:
  """The memory the system can still give (Linux's MemAvailable), None where unknown."""
  try:
    with open('/proc/meminfo') as f:
      for line in f:
        if line.startswith('MemAvailable:'):
          return int(line.split()[1]) * 1024
  except (OSError, ValueError, IndexError):
    pass
  try:
    return os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
  except (ValueError, OSError, AttributeError):
    return None


def _check_memory(data_dir, count, channels, size):
  needed = count * size * size * (channels or 3)
  available = available_memory_bytes()
  if available is None:
    return
  limit = int(available * MEMORY_FRACTION)
  if needed > limit:
    raise errors.UserError(
        f'the image folder {data_dir} holds {count} images, {_size(needed)} decoded at '
        f'{size}x{size}x{channels or 3}, more than the {_size(limit)} limit (a quarter of the '
        f'{_size(available)} of available memory: a run holds its images several times); use '
        'fewer images or a machine with more memory')


def _size(count):
  """A byte count for people: '1.5 GiB', '45.0 KiB', '12 bytes'."""
  for unit, scale in (('GiB', 2**30), ('MiB', 2**20), ('KiB', 2**10)):
    if count >= scale:
      return f'{count / scale:.1f} {unit}'
  return f'{count} bytes'


def _decode_all(files, size):
  """(present [N] bool, uint8 [N, size, size, 3] images, native channel counts [N]); a file
  that cannot be read or decoded is not present."""
  count = len(files)
  present = np.zeros(count, bool)
  images = np.zeros([count, size, size, 3], np.uint8)
  channels = np.zeros(count, np.int64)
  if not count:
    return present, images, channels

  def load(index, path):
    image = image_rules.decode(tf.io.read_file(path))
    fitted = image_rules.fit_images(image_rules.to_channels(image, 3), size)
    return index, fitted, tf.shape(image)[-1]

  dataset = (tf.data.Dataset.from_tensor_slices((tf.range(count, dtype=tf.int64), files))
             .map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
             .ignore_errors().batch(1024))
  with quiet_import.decoder_lines_dropped():  # A damaged file is named by the caller.
    for index, batch, native in dataset.as_numpy_iterator():
      present[index], images[index], channels[index] = True, batch, native
  return present, images, channels


def _refuse_files(data_dir, bad, what, fix):
  first = _shown(data_dir, bad[0])
  more = f' (and {len(bad) - 1} more)' if len(bad) > 1 else ''
  raise errors.UserError(f'{first}{more} {what}; {fix}')


def read_image_folder(data_dir, channels=None,
                      size=pipelines.MODEL_IMAGE_SIZE) -> ImageFolder:
  """Reads the image folder `data_dir` (see the module doc).

  Args:
    data_dir: the folder.
    channels: None (from the images), 1 (grayscale) or 3 (colour).
    size: the images' size S (S x S), to which image_rules.fit_images brings each.

  Returns:
    ImageFolder.

  Raises:
    UserError: the folder is not as the module doc says; the message names the fix.
  """
  if channels not in CHANNELS:
    raise errors.ConfigError(f'build_ssl_data.channels must be None (from the images), 1 '
                             f'(grayscale) or 3 (colour), got {channels!r}')
  class_names, parts = _layout(data_dir)
  files = [path for _, paths, _ in parts for path in paths]
  foreign = [path for path in files if not image_rules.is_image_name(path)]
  if foreign:
    _refuse_files(data_dir, foreign, f'is not a {image_rules.IMAGE_FORMATS} image (by its name)',
                  'move such files out of the folder, or convert them')
  _check_memory(data_dir, len(files), channels, size)
  present, images, native = _decode_all(files, size)
  if not present.all():
    missing = [f for f, ok in zip(files, present) if not ok]
    animated = [f for f in missing if image_rules.is_animated_webp(tf.io.read_file(f))]
    if animated:
      _refuse_files(data_dir, animated, f'is {image_rules.ANIMATED_WEBP}',
                    'save its first frame as a still image')
    _refuse_files(data_dir, missing, f'is not a readable {image_rules.IMAGE_FORMATS} image',
                  'remove or replace such files')
  colour = native >= 3
  if channels is None:
    channels = 3 if colour.any() else 1
  else:
    other = [f for f, c in zip(files, colour) if c != (channels == 3)]
    if other:
      kind = 'colour' if channels == 1 else 'grayscale'
      _refuse_files(data_dir, other,
                    f'is {kind}, but build_ssl_data.channels = {channels} (the folder mixes '
                    'channel counts)',
                    f'convert such images, or leave build_ssl_data.channels unbound (then '
                    f'{"colour" if colour.any() else "grayscale"})')
  images = images[..., :channels]
  arrays, start = {}, 0
  for folder, paths, labels in parts:
    arrays[folder] = (images[start:start + len(paths)], labels)
    start += len(paths)
  empty = (images[:0], np.zeros([0], np.int64))
  named = {}
  for split, folder in (('labeled', LABELED), ('validation', VALIDATION), ('test', TEST)):
    named[f'{split}_images'], named[f'{split}_labels'] = arrays.get(folder, empty)
  named['unlabeled_images'] = np.concatenate([named['labeled_images'], arrays[UNLABELED][0]])
  return ImageFolder(class_names, named, f'{NAME}:{os.path.abspath(data_dir)}')
