"""bin/make_image_folder: a built-in dataset as an image folder of PNG files, with the built-in
loader's labeled and validation images, read back pixel for pixel."""
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tests import fixtures
from tests.training import runs
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets
from tf_ipmssl.data import folder_writer
from tf_ipmssl.data import image_folder
from tf_ipmssl.data import ssl_data


@pytest.fixture(scope='module')
def fake_dir(tmp_path_factory):
  directory = str(tmp_path_factory.mktemp('fashion'))
  fixtures.make_fake_dataset(directory, 'fashion_mnist', num_train=160, num_test=40)
  return directory


def _indices(paths):
  return sorted(int(re.search(r'_(\d+)\.png$', p).group(1)) for p in paths)


def test_folder_holds_the_built_in_split(fake_dir, tmp_path):
  data = datasets.load_dataset('fashion_mnist', source='local', data_dir=fake_dir)
  out = str(tmp_path / 'folder')
  written = folder_writer.write_image_folder(out, data, labeled_per_class=2, validation_size=20,
                                             split_seed=3, max_unlabeled=30, max_test=20)
  assert written == {'labeled': 20, 'unlabeled': 30, 'validation': 20, 'test': 20}
  built_in = ssl_data.build_ssl_data(ssl_data.BuildSslData('fashion_mnist', source='local',
                                                           data_dir=fake_dir, num_labeled=20,
                                                           validation_size=20, split_seed=3))
  for folder, expected in (('labeled', built_in.splits.labeled),
                           ('validation', built_in.splits.validation)):
    assert _indices(image_folder.list_files(os.path.join(out, folder))) == list(expected)
  unlabeled = _indices(image_folder.list_files(os.path.join(out, 'unlabeled')))
  assert not set(unlabeled) & set(built_in.splits.labeled)
  assert not set(unlabeled) & set(built_in.splits.validation)
  names = dataset_specs.FASHION_MNIST.class_names
  for path in image_folder.list_files(os.path.join(out, 'labeled')):
    index = _indices([path])[0]
    # The class folder of the image's label, and the image's pixels, exactly.
    assert os.path.basename(os.path.dirname(path)) == folder_writer.folder_name(
        names[data.train_labels[index]])
    np.testing.assert_array_equal(tf.io.decode_png(tf.io.read_file(path)).numpy(),
                                  data.train_images[index])
  assert folder_writer.folder_name('T-shirt/top') == 't-shirt_top'
  assert folder_writer.folder_name('Ankle boot') == 'ankle_boot'
  folder = ssl_data.build_ssl_data(ssl_data.BuildSslData('image_folder', data_dir=out,
                                                         num_labeled=None, validation_size=0))
  assert folder.class_names == tuple(sorted(folder_writer.folder_name(n) for n in names))
  assert len(folder.unlabeled_images) == 50 and len(folder.test_labels) == 20
  np.testing.assert_array_equal(np.bincount(folder.labeled_labels), [2] * 10)
  with pytest.raises(errors.UserError, match='is not an empty folder'):
    folder_writer.write_image_folder(out, data)


def test_bin_make_image_folder(fake_dir, tmp_path):
  out = str(tmp_path / 'folder')
  result = runs.run_program('make_image_folder', f'--output={out}', f'--data_dir={fake_dir}',
                            '--labeled_per_class=1', '--validation_size=0', '--max_test=10')
  assert result.returncode == 0, result.stderr
  # 160 training images: 10 labeled, 150 unlabeled; 10 of the 40 test images.
  where = fixtures.fake_dataset_dir(fake_dir, 'fashion_mnist')
  assert (f'Wrote 170 PNG images of fashion_mnist (local:{where}) to {out}: 10 labeled, '
          '150 unlabeled, 0 validation, 10 test') in result.stdout
  assert not os.path.exists(os.path.join(out, 'validation'))


def test_a_mismatched_folder_has_foreign_unlabeled_images(fake_dir, tmp_path):
  """With classes, labeled/, validation/ and test/ hold those classes only; unlabeled/ holds
  the asked number of images, the foreign share of them from the other classes; read back as
  a folder with validation held out per class where validation/ is missing."""
  data = datasets.load_dataset('fashion_mnist', source='local', data_dir=fake_dir)
  out = str(tmp_path / 'folder')
  written = folder_writer.write_image_folder(out, data, labeled_per_class=2, validation_size=10,
                                             classes=['Trouser', 0, 5], unlabeled_size=40,
                                             foreign_share=0.5)
  class_dirs = sorted(os.listdir(os.path.join(out, 'labeled')))
  assert class_dirs == ['sandal', 't-shirt_top', 'trouser']
  assert sorted(os.listdir(os.path.join(out, 'test'))) == class_dirs
  assert written['labeled'] == 6 and written['validation'] == 10
  unlabeled = _indices(os.listdir(os.path.join(out, 'unlabeled')))
  labels = data.train_labels[unlabeled]
  assert np.count_nonzero(~np.isin(labels, [0, 1, 5])) == 20  # The foreign half.
  # The built-in loader's unlabeled images under the same settings, found in train by their
  # pixels (the fixture's random images are distinct): the folder holds exactly those, less
  # the ones labeled/ already holds (the folder counts labeled images as unlabeled too).
  built_in = ssl_data.build_ssl_data(ssl_data.BuildSslData(
      'fashion_mnist', source='local', data_dir=fake_dir, num_labeled=6, validation_size=10,
      classes=('Trouser', 0, 5), unlabeled_size=40, foreign_share=0.5))
  flat = data.train_images.reshape(len(data.train_images), -1)
  drawn = [int(np.flatnonzero((flat == image.reshape(-1)).all(axis=1))[0])
           for image in built_in.unlabeled_images]
  assert len(set(drawn)) == 40
  labeled = _indices(f for name in class_dirs
                     for f in os.listdir(os.path.join(out, 'labeled', name)))
  assert unlabeled == sorted(set(drawn) - set(labeled))
  test_written = sum(len(files) for _, _, files in os.walk(os.path.join(out, 'test')))
  assert test_written == np.count_nonzero(np.isin(data.test_labels, [0, 1, 5]))
  with pytest.raises(errors.ConfigError, match='foreign_share'):
    folder_writer.write_image_folder(str(tmp_path / 'other'), data, foreign_share=0.5)


def test_validation_per_class_held_out_of_a_folder_without_validation(fake_dir, tmp_path):
  data = datasets.load_dataset('fashion_mnist', source='local', data_dir=fake_dir)
  out = str(tmp_path / 'folder')
  folder_writer.write_image_folder(out, data, labeled_per_class=6, validation_size=0,
                                   max_unlabeled=20)
  def read(**settings):
    return ssl_data.build_ssl_data(ssl_data.BuildSslData(
        'image_folder', data_dir=out, num_labeled=None, validation_size=0, **settings))
  whole = read()
  held = read(validation_per_class=2, split_seed=1)
  np.testing.assert_array_equal(np.bincount(held.validation_labels), [2] * 10)
  np.testing.assert_array_equal(np.bincount(held.labeled_labels), [4] * 10)
  assert len(held.unlabeled_images) == len(whole.unlabeled_images) - 20
  # The held-out images are labeled/ images, gone from the labeled and the unlabeled set.
  flat = whole.labeled_images.reshape(len(whole.labeled_images), -1)
  for image in held.validation_images:
    assert (flat == image.reshape(-1)).all(axis=1).any()
    assert not (held.labeled_images.reshape(len(held.labeled_images), -1)
                == image.reshape(-1)).all(axis=1).any()
  with_folder = str(tmp_path / 'with_validation')
  folder_writer.write_image_folder(with_folder, data, labeled_per_class=2, validation_size=10,
                                   max_unlabeled=5)
  with pytest.raises(errors.ConfigError, match='has its own validation/'):
    ssl_data.build_ssl_data(ssl_data.BuildSslData(
        'image_folder', data_dir=with_folder, num_labeled=None, validation_size=0,
        validation_per_class=1))
