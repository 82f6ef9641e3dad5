"""Cells of Tables 1-3 that are one configuration: found from the gin files themselves, the
extra seeds a Table 3 cell reuses, and the seed-by-seed comparison of their runs."""
import itertools
import json

import gin

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import configurables
from studies.fashion_mnist_100 import one_configuration
from tf_ipmssl.sweep import results as results_lib

PRESET = str(cells_lib.GIN_DIR / 'presets' / 'cpu_fashion_mnist_100.gin')
FISHER_F, NONE_FISHER = 'table2/cifar10_fisher_f', 'table3/cifar10_none_fisher'


def _configuration(cell):
  gin.clear_config()
  try:
    configurables.parse([str(cell.gin_path), PRESET], [])
    return json.dumps(configurables.run_config().to_json(), sort_keys=True)
  finally:
    gin.clear_config()


def test_the_groups_are_exactly_the_cells_with_equal_configurations():
  cells = cells_lib.select_cells(tables=['table1', 'table2', 'table3'], datasets=['cifar10'])
  configurations = {cell.id: _configuration(cell) for cell in cells}
  equal = {frozenset((a, b)) for a, b in itertools.combinations(configurations, 2)
           if configurations[a] == configurations[b]}
  grouped = {frozenset(pair) for group in one_configuration.GROUPS
             for pair in itertools.combinations(group, 2)}
  assert equal == grouped
  assert one_configuration.reused() == {
      NONE_FISHER: FISHER_F,
      'table3/cifar10_none_fisher_sobolev': 'table2/cifar10_fisher_f_sobolev_fneg'}


def _run(seed, error, cpu='A'):
  return results_lib.RunResult(seed=seed, test_error=error, model_dir='', cpu=cpu)


def _cell(cell_id, *runs):
  return results_lib.CellResult(cells_lib.get_cell(cell_id), tuple(runs))


def test_a_table3_cell_reuses_only_the_extra_seeds_it_has_not_run():
  results = {FISHER_F: _cell(FISHER_F, *(_run(s, 20.0 + s) for s in range(5))),
             NONE_FISHER: _cell(NONE_FISHER, _run(0, 30.0), _run(4, 34.0))}
  reused = one_configuration.with_reused_seeds(results)
  # Seeds 1 and 2 are never borrowed; seed 4 is its own run; seed 3 is fisher_f's.
  assert reused[NONE_FISHER].seeds == (0, 3, 4)
  assert reused[NONE_FISHER].errors == (30.0, 23.0, 34.0)
  assert reused[FISHER_F] is results[FISHER_F]
  # A group without its Table 2 cell's results changes nothing.
  assert one_configuration.with_reused_seeds({NONE_FISHER: results[NONE_FISHER]}) == {
      NONE_FISHER: results[NONE_FISHER]}


def test_trained_twice_says_whether_one_seed_gave_one_number():
  table1 = 'table1/cifar10_fisher_kplus1'
  results = {table1: _cell(table1, _run(0, 25.0, cpu=None)),
             FISHER_F: _cell(FISHER_F, _run(0, 24.0), _run(1, 21.0), _run(2, 22.5),
                             _run(3, 23.0)),
             NONE_FISHER: _cell(NONE_FISHER, _run(1, 21.0), _run(2, 22.0, cpu='B'),
                                _run(3, 23.5))}
  rows = one_configuration.trained_twice(results).splitlines()[2:]
  assert rows == [
      f'| {table1}, {FISHER_F} | 0 | 25.00 (CPU not recorded); 24.00 (A) | no: 1.00 points '
      'apart, a CPU not recorded |',
      f'| {FISHER_F}, {NONE_FISHER} | 1 | 21.00 (A); 21.00 (A) | yes |',
      f'| {FISHER_F}, {NONE_FISHER} | 2 | 22.50 (A); 22.00 (B) | no: 0.50 points apart, on '
      'different CPUs |',
      f'| {FISHER_F}, {NONE_FISHER} | 3 | 23.00 (A); 23.50 (A) | **no**: 0.50 points apart on '
      'one CPU |']
  assert one_configuration.trained_twice({FISHER_F: results[FISHER_F]}) == (
      'No seed has run in two cells of one configuration yet.')


def test_trained_twice_compares_the_runs_on_one_cpu_apart_from_the_rest():
  table1 = 'table1/cifar10_fisher_kplus1'
  results = {table1: _cell(table1, _run(0, 25.0, cpu=None), _run(1, 22.0, cpu='B')),
             FISHER_F: _cell(FISHER_F, _run(0, 24.0), _run(1, 23.0)),
             NONE_FISHER: _cell(NONE_FISHER, _run(0, 24.0), _run(1, 23.5))}
  rows = one_configuration.trained_twice(results).splitlines()[2:]
  assert rows == [
      f'| {table1}, {FISHER_F}, {NONE_FISHER} | 0 | 25.00 (CPU not recorded); 24.00 (A); '
      f'24.00 (A) | no: 1.00 points apart, a CPU not recorded; yes between {FISHER_F} and '
      f'{NONE_FISHER}, on one CPU |',
      f'| {table1}, {FISHER_F}, {NONE_FISHER} | 1 | 22.00 (B); 23.00 (A); 23.50 (A) | no: '
      f'1.50 points apart, on different CPUs; **no** between {FISHER_F} and {NONE_FISHER}: '
      '0.50 points apart on one CPU |']


def test_trained_twice_lists_a_reused_run_once():
  results = one_configuration.with_reused_seeds({
      FISHER_F: _cell(FISHER_F, *(_run(s, 20.0 + s) for s in range(5))),
      NONE_FISHER: _cell(NONE_FISHER, *(_run(s, 20.0 + s) for s in range(3)))})
  assert results[NONE_FISHER].seeds == (0, 1, 2, 3, 4)
  rows = one_configuration.trained_twice(results).splitlines()[2:]
  # Seeds 3 and 4 of the Table 3 cell are fisher_f's runs: one run each, no row.
  assert [row.split(' | ')[1] for row in rows] == ['0', '1', '2']
