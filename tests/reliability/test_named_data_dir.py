"""A named data_dir is used or the run fails naming the missing files: never a silent
fallback to another copy, such as Debian's /usr/share/datasets/fashion-mnist."""
import os
import pathlib

import pytest

from tests import fixtures
from tests.training import runs


def test_incomplete_named_data_dir_names_the_missing_file(tmp_path):
  from tf_ipmssl import errors  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import dataset_specs  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import datasets  # pylint: disable=g-import-not-at-top
  directory = tmp_path / 'fashion'
  fixtures.make_fake_dataset(str(directory), 'fashion_mnist', num_train=20, num_test=10)
  copy = pathlib.Path(fixtures.fake_dataset_dir(directory, 'fashion_mnist'))
  removed = [n for n in os.listdir(copy) if n.startswith('t10k-labels')][0]
  os.remove(copy / removed)
  # The system's copy stays where it is (on Debian, /usr/share/datasets/fashion-mnist).
  assert dataset_specs.FASHION_MNIST.system_dirs
  with pytest.raises(errors.DatasetNotFoundError) as e:
    datasets.load_dataset('fashion_mnist', source='local', data_dir=str(directory))
  assert f'{copy} (files missing: t10k-labels-idx1-ubyte[.gz])' in str(e.value)
  for place in dataset_specs.FASHION_MNIST.system_dirs:
    assert place not in str(e.value).split('To get it')[0]


def test_bin_train_with_empty_named_data_dir_fails(tmp_path):
  empty = tmp_path / 'empty'
  empty.mkdir()
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(str(empty)))
  assert result.returncode == 1, result.stdout + result.stderr
  assert 'Traceback' not in result.stderr
  assert f'{empty} (files missing: ' in result.stderr
  assert 'To get it: ' in result.stderr.split(f'{empty} (files missing: ')[1]
  assert not os.path.exists(tmp_path / 'm' / 'checkpoints')
