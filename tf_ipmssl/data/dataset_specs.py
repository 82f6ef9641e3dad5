"""Every dataset the library knows, one `DatasetSpec` each: the only list of datasets.

The loaders (`datasets`, `local_files`, `tfds_source`), the result tables (`cells`) and the
test fixtures read this registry. Adding a dataset means one `DatasetSpec` here, a reader
in `local_files` (named by `DatasetSpec.reader`), a gin base and a test fixture. A folder of
the user's own images (`IMAGE_FOLDER`, data/image_folder.py) needs none of these.

This module imports neither TensorFlow nor numpy, so that `cells` (and `bin/cells`) stay
instant.
"""
import dataclasses
from typing import Dict, Optional, Tuple

from tf_ipmssl import errors


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
  """What the code needs to know about one dataset.

  Attributes:
    name: the name in configurations (`build_ssl_data.dataset`), run records and cell ids.
    title: the name in tables and plots, e.g. 'CIFAR-10'.
    num_classes: K.
    image_shape: (H, W, C) of one image as stored (before padding to 32x32).
    image_size: the networks' input size when `build_ssl_data.image_size` is not bound
      (32 for the paper's datasets, 96 for STL-10; one of IMAGE_SIZES).
    tfds_name: its TensorFlow Datasets name.
    tfds_unlabeled_split: the TFDS split of its images without labels (STL-10's
      'unlabelled'), None where it has none.
    num_folds: its predefined folds of labeled training images (STL-10's 10, in
      fold_indices.txt; `build_ssl_data.stl10_fold`), 0 where it has none.
    files: the original distribution files a local copy consists of.
    extra_files: files needed only with `include_extra` (SVHN's extra split).
    optional_suffix: a suffix the files may carry ('.gz': gzipped or not).
    files_dir: the directory the distribution archive unpacks to, looked into as well.
    archive: the distribution archive, read without unpacking it, where the reader can.
    reader: the `local_files` function that finds and reads a copy in a directory:
      reader(spec, directory, include_extra) -> LocalCopy or None.
    subdirs: sub-directories of data_dir / $TF_IPMSSL_DATA_DIR that may hold it.
    system_dirs: where a system package installs it.
    how_to_get: instructions for the "not found" error message.
    class_names: the name of each class, by label.
  """
  name: str
  title: str
  num_classes: int
  image_shape: Tuple[int, int, int]
  tfds_name: str
  files: Tuple[str, ...]
  reader: str
  subdirs: Tuple[str, ...]
  how_to_get: str
  class_names: Tuple[str, ...]
  extra_files: Tuple[str, ...] = ()
  optional_suffix: str = ''
  files_dir: Optional[str] = None
  archive: Optional[str] = None
  system_dirs: Tuple[str, ...] = ()
  image_size: int = 32
  tfds_unlabeled_split: Optional[str] = None
  num_folds: int = 0

  def required_files(self, include_extra: bool = False) -> Tuple[str, ...]:
    """The files a local copy needs."""
    return self.files + (self.extra_files if include_extra else ())


CIFAR10 = DatasetSpec(
    files=tuple(f'data_batch_{i}' for i in range(1, 6)) + ('test_batch',),
    name='cifar10', title='CIFAR-10', num_classes=10, image_shape=(32, 32, 3),
    tfds_name='cifar10', reader='find_cifar10', subdirs=('cifar10', 'cifar-10'),
    files_dir='cifar-10-batches-py', archive='cifar-10-python.tar.gz',
    how_to_get=(
        'download https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz into one of '
        'the directories above (extracting it is optional)'),
    class_names=('airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse',
                 'ship', 'truck'),
)

SVHN = DatasetSpec(
    files=('train_32x32.mat', 'test_32x32.mat'),
    name='svhn', title='SVHN', num_classes=10, image_shape=(32, 32, 3),
    tfds_name='svhn_cropped', reader='find_svhn', subdirs=('svhn', 'svhn_cropped'),
    extra_files=('extra_32x32.mat',),
    how_to_get=(
        'download http://ufldl.stanford.edu/housenumbers/train_32x32.mat and test_32x32.mat '
        '(and extra_32x32.mat for include_extra) into one of the directories above'),
    class_names=tuple(str(digit) for digit in range(10)),
)

FASHION_MNIST = DatasetSpec(
    files=('train-images-idx3-ubyte', 'train-labels-idx1-ubyte', 't10k-images-idx3-ubyte',
           't10k-labels-idx1-ubyte'),
    name='fashion_mnist', title='Fashion-MNIST', num_classes=10, image_shape=(28, 28, 1),
    tfds_name='fashion_mnist', reader='find_fashion_mnist',
    subdirs=('fashion_mnist', 'fashion-mnist'), optional_suffix='.gz',
    system_dirs=('/usr/share/datasets/fashion-mnist',),
    how_to_get=(
        '`apt-get install dataset-fashion-mnist` (installs /usr/share/datasets/fashion-mnist)'
        ', or download the four files from '
        'http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/ into one of the '
        'directories above'),
    class_names=('T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt',
                 'Sneaker', 'Bag', 'Ankle boot'),
)

# The binary version (stl10_binary/): each image 3x96x96 uint8, every channel plane stored
# column-major; labels 1..10 in the _y files; unlabeled_X.bin's 100,000 images have none;
# fold_indices.txt: one line of 0-based train indices per fold.
STL10 = DatasetSpec(
    files=('train_X.bin', 'train_y.bin', 'test_X.bin', 'test_y.bin', 'unlabeled_X.bin',
           'fold_indices.txt'),
    name='stl10', title='STL-10', num_classes=10, image_shape=(96, 96, 3), image_size=96,
    tfds_name='stl10', tfds_unlabeled_split='unlabelled', num_folds=10,
    reader='find_stl10', subdirs=('stl10', 'stl-10'), files_dir='stl10_binary',
    how_to_get=(
        'download http://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz (2.6 GB) and '
        'extract it into one of the directories above (it unpacks to stl10_binary/)'),
    class_names=('airplane', 'bird', 'car', 'cat', 'deer', 'dog', 'horse', 'monkey', 'ship',
                 'truck'),
)

# Name -> spec, in the order datasets are listed to users.
REGISTRY: Dict[str, DatasetSpec] = {
    spec.name: spec for spec in (CIFAR10, SVHN, FASHION_MNIST, STL10)}

# `build_ssl_data.dataset` of a folder of the user's own images (data/image_folder.py): not a
# registered dataset (its classes and size are the folder's).
IMAGE_FOLDER = 'image_folder'

# The square input sizes the networks are built for (`build_ssl_data.image_size`; the rule
# that adapts them is in docs/algorithm.md#image-sizes), and the size of an image folder, or of
# a configuration naming no dataset, when none is bound.
IMAGE_SIZES = (32, 64, 96)
DEFAULT_IMAGE_SIZE = 32


def default_image_size(dataset: Optional[str]) -> int:
  """The input size of `dataset` when `build_ssl_data.image_size` is not bound: its spec's
  `image_size`; DEFAULT_IMAGE_SIZE for an image folder or a name that is not registered."""
  spec = REGISTRY.get(dataset) if isinstance(dataset, str) else None
  return spec.image_size if spec else DEFAULT_IMAGE_SIZE


def check_image_size(name: str, image_size) -> None:
  """A ConfigError naming IMAGE_SIZES unless `image_size` (the setting `name`) is one."""
  if (isinstance(image_size, bool) or not isinstance(image_size, int)
      or image_size not in IMAGE_SIZES):
    raise errors.ConfigError(
        f'{name} = {image_size!r} is not a size the networks are built for; use one of '
        f'{", ".join(map(str, IMAGE_SIZES))} (docs/algorithm.md#image-sizes)')


def names() -> Tuple[str, ...]:
  """The names of every dataset, in the registry's order."""
  return tuple(REGISTRY)
