"""The 100-label CPU preset keeps what makes each paper cell and replaces only what it says.

Each CIFAR-10 cell of Tables 1, 2 and 3, and the supervised baseline, parsed with the preset
appended: every binding the paper's cell must give (tests/gin/expected.py, derived from the
paper), its constraints and where they act, still hold except the dataset, widths and training length that the preset replaces, and the
preset's rule (learning rates x 5, ρ x 1000, weight average, IPM ramp-up) is bound as
scales and options, so each cell's own values and their ratios stay as they are.
"""
import gin
import pytest

from tests import gin_queries
from tests.gin import expected
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import configurables

PRESET = str(cells_lib.GIN_DIR / 'presets' / 'cpu_fashion_mnist_100.gin')
SUPERVISED = str(cells_lib.GIN_DIR / 'presets' / 'cpu_fashion_mnist_100_supervised.gin')
REPLACED = {'build_ssl_data.dataset': 'fashion_mnist', 'build_ssl_data.num_labeled': 100,
            'build_critic.width': 0.25, 'build_generator.ngf': 32}
RULE = {'train.learning_rate_scale': 5.0, 'ssl.constraint_penalty_scale': 1000.0,
        'train.critic_ema_decay': 0.999, 'ssl.ipm_rampup_updates': 600,
        'build_ssl_data.validation_size': 5000}


def _parse(*files):
  gin.clear_config()
  configurables.parse(list(files), [])


def _bound(name):
  return gin_queries.bound_value(name)


def _constraints():
  """{kind: component} of the bound ssl.constraints."""
  built = [reference.scoped_configurable_fn()
           for reference in gin_queries.bound_value('ssl.constraints', [])]
  return {c.kind: c.component for c in built}


PRESET_CELLS = cells_lib.select_cells(tables=['table1', 'table2', 'table3'],
                                      datasets=['cifar10'])


def test_preset_covers_the_three_tables():
  assert [len([c for c in PRESET_CELLS if c.table == t]) for t in ('table1', 'table2',
                                                                   'table3')] == [13, 12, 11]


@pytest.mark.parametrize('cell', PRESET_CELLS, ids=lambda c: c.id)
def test_preset_keeps_the_cell(cell):
  try:
    _parse(str(cell.gin_path), PRESET)
    for name, value in expected.bindings(cell).items():
      if name in REPLACED or name == 'train.epochs':
        continue
      assert _bound(name) == pytest.approx(value), name
    assert _constraints() == expected.constraints(cell)
    for name, value in {**REPLACED, **RULE}.items():
      assert _bound(name) == value, name
    # The length: 1,800 critic updates whatever n_c is; no steps bound.
    assert _bound('train.critic_updates') == 1800 and _bound('train.steps') is None
  finally:
    gin.clear_config()


def test_supervised_baseline_under_the_preset():
  cell = cells_lib.get_cell('appendix_c/cifar10_none_4k')
  try:
    _parse(str(cell.gin_path), SUPERVISED)
    assert _bound('train.mode') == 'supervised'
    assert _bound('build_critic.normalization') == 'none'
    for name, value in {**REPLACED, **RULE}.items():
      assert _bound(name) == value, name
    assert (_bound('train.steps'), _bound('train.early_stopping_patience'),
            _bound('train.early_stopping_min_steps')) == (12000, 2000, 2400)
  finally:
    gin.clear_config()
