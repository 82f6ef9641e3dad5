"""The registry of datasets is the only list of them: everything else reads it."""
import subprocess
import sys

from tests import fixtures
from tests.training import runs
from tf_ipmssl import cells
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets
from tf_ipmssl.data import local_files


def test_every_dataset_has_a_reader_a_fixture_and_a_gin_base():
  for spec in dataset_specs.REGISTRY.values():
    assert callable(getattr(local_files, spec.reader)), spec.name
    assert spec.reader in fixtures.FAKE_WRITERS, spec.name
    assert (cells.GIN_DIR / 'bases' / f'{spec.name}.gin').is_file(), spec.name
    assert len(spec.image_shape) == 3 and spec.num_classes > 1


def test_loaders_and_cells_read_the_registry():
  assert datasets.DATASETS == dataset_specs.names() == tuple(dataset_specs.REGISTRY)
  assert cells.DATASET_NAMES == {s.name: s.title for s in dataset_specs.REGISTRY.values()}


def test_registry_and_cells_import_no_tensorflow():
  code = ('import sys; import tf_ipmssl.cells; from tf_ipmssl.data import dataset_specs; '
          'print(sorted(m for m in sys.modules if m.split(".")[0] in '
          '("tensorflow", "keras", "numpy", "gin")))')
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=runs.environment(), cwd=str(runs.REPO_ROOT), check=True)
  assert result.stdout.strip() == '[]'
