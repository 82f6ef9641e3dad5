"""Shared fixtures of the data tests."""
import dataclasses
import tempfile

import pytest

from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets


@pytest.fixture
def no_ambient_data(tmp_path, monkeypatch):
  """Hides data outside the test's tmp dir: $TF_IPMSSL_DATA_DIR, ~/.cache, system dirs."""
  monkeypatch.delenv(datasets.DATA_DIR_ENV, raising=False)
  monkeypatch.setenv('HOME', str(tmp_path / 'home'))
  monkeypatch.setitem(dataset_specs.REGISTRY, 'fashion_mnist', dataclasses.replace(
      dataset_specs.FASHION_MNIST, system_dirs=()))


@pytest.fixture(autouse=True)
def scratch_tempdir(tmp_path, monkeypatch):
  """Python's temporary files of a data test in its tmp dir: TFDS (`tfds.load`, `mock_data`)
  makes a temporary folder for every dataset it has not prepared and never removes it."""
  scratch = tmp_path / 'tempfile'
  scratch.mkdir()
  monkeypatch.setattr(tempfile, 'tempdir', str(scratch))
  return scratch
