"""Fixtures shared by the reliability tests."""
import pytest

from tests.training import runs


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  """Tiny fake Fashion-MNIST files, one set per test module."""
  return runs.make_data(tmp_path_factory.mktemp('data'))
