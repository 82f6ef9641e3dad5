"""The cell registry covers every number of the paper's result tables, one gin file each."""
import dataclasses
import subprocess
import sys

import gin
import pytest

from tests import gin_queries
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import configurables
from tf_ipmssl import errors
from tf_ipmssl.training import semi_supervised

# Counted from the paper (the paper's tables in its .tex source):
# Table 1: per dataset, WGAN clip (plain only) + 4 IPMs x 3 formulations = 13.
# Table 2: 12 constraint placements per dataset.
# Table 3: per dataset, BN (Fisher only; '–' for Fisher + Sobolev) + 5 x 2 = 11.
# Appendix A: CIFAR-10 only, 4 rows (Fisher BN / LN / no norm, Fisher + Sobolev no norm) x
#   4 label counts (1k, 2k, 4k, 8k) = 16.
# Appendix C: {BN, LN, none} x {N labels, all labels} x 2 datasets = 12.
EXPECTED_COUNTS = {'table1': 26, 'table2': 24, 'table3': 22, 'appendix_a': 16,
                   'appendix_c': 12}
REPO_ROOT = cells_lib.REPO_ROOT
# gin/ holds the bases, the presets, the tables' cells and standalone example configs.
NON_CELL_DIRS = ('bases', 'presets')
# Folders of the cells of tables of your own, whose layouts are JSON files outside the
# package (a study's tables; table_file.py): not the paper's cells.
OWN_TABLE_DIRS = ('fashion_mnist_study', 'fashion_mnist_ssl')


def test_counts_per_table():
  counts = {name: 0 for name in cells_lib.TABLES}
  for cell in cells_lib.all_cells():
    counts[cell.table] += 1
  assert counts == EXPECTED_COUNTS
  assert len(cells_lib.all_cells()) == 100


def test_counts_per_dataset():
  def count(table, dataset):
    return len(cells_lib.select_cells(tables=[table], datasets=[dataset]))
  assert [count('table1', d) for d in ('cifar10', 'svhn')] == [13, 13]
  assert [count('table2', d) for d in ('cifar10', 'svhn')] == [12, 12]
  assert [count('table3', d) for d in ('cifar10', 'svhn')] == [11, 11]
  assert [count('appendix_a', d) for d in ('cifar10', 'svhn')] == [16, 0]
  assert [count('appendix_c', d) for d in ('cifar10', 'svhn')] == [6, 6]


def test_ids_are_unique_and_name_their_gin_file():
  ids = [cell.id for cell in cells_lib.all_cells()]
  assert len(set(ids)) == len(ids)
  for cell in cells_lib.all_cells():
    assert cell.gin_file == f'gin/{cell.id}.gin'
    assert cell.id.startswith(f'{cell.table}/{cell.dataset}_{cell.row}')


def test_every_registry_gin_file_exists_and_states_the_paper_number():
  for cell in cells_lib.all_cells():
    assert cell.gin_path.is_file(), cell.gin_file
    assert f'Paper: {cell.paper_text} %' in cell.gin_path.read_text(), cell.gin_file


def test_every_cell_gin_file_is_in_the_registry():
  registered = {cell.gin_path for cell in cells_lib.all_cells()}
  for path in cells_lib.GIN_DIR.rglob('*.gin'):
    relative = path.relative_to(cells_lib.GIN_DIR)
    if len(relative.parts) == 1 or relative.parts[0] in NON_CELL_DIRS + OWN_TABLE_DIRS:
      continue  # Standalone examples (cifar_fisher_ln.gin, ...), bases and presets.
    assert relative.parts[0] in cells_lib.TABLES, f'unexpected directory gin/{relative}'
    assert path in registered, f'gin/{relative} is not in tf_ipmssl/cells.py'


def test_tables_lay_out_every_cell():
  for table in cells_lib.TABLES.values():
    cells = [cells_lib.cell_at(table.name, dataset, row, column)
             for row, _ in table.rows for dataset, column, _ in table.columns]
    assert sum(cell is not None for cell in cells) == EXPECTED_COUNTS[table.name]
  # Positions where the paper prints '–'.
  assert cells_lib.cell_at('table3', 'cifar10', 'batch_norm', 'fisher_sobolev') is None
  assert cells_lib.cell_at('table1', 'svhn', 'wgan_clip', 'kplus1') is None


@pytest.mark.parametrize('cell_id, error, std', [
    ('table1/cifar10_wgan_clip_plain', 40.85, None),
    ('table1/cifar10_fisher_sobolev_kplus1', 16.29, 0.42),
    ('table1/svhn_wgan_gp_kplus1_entropy', 33.85, 1.46),
    ('table2/cifar10_fisher_f_sobolev_fneg', 17.08, None),
    ('table2/svhn_fisher_fpos_sobolev_fneg', 8.01, None),
    ('table2/svhn_gp_fneg', 70.61, None),
    ('table3/cifar10_layer_norm_singleton_per_channel_fisher', 16.45, 0.42),
    ('table3/svhn_none_fisher_sobolev', 8.31, 0.60),
    ('appendix_a/cifar10_fisher_sobolev_none_4k', 15.77, 0.19),
    ('appendix_a/cifar10_fisher_batch_norm_8k', 21.35, None),
    ('appendix_a/cifar10_fisher_layer_norm_1k', 19.74, 0.21),
    ('appendix_c/cifar10_batch_norm_all', 11.47, 0.10),
    ('appendix_c/svhn_none_1k', 21.89, 0.36),
])
def test_paper_numbers(cell_id, error, std):
  cell = cells_lib.get_cell(cell_id)
  assert (cell.paper_error, cell.paper_std) == (error, std)


def test_select_cells():
  assert len(cells_lib.select_cells()) == 100
  assert [c.id for c in cells_lib.select_cells(['table1/cifar10_fisher_*'])] == [
      'table1/cifar10_fisher_plain', 'table1/cifar10_fisher_kplus1',
      'table1/cifar10_fisher_kplus1_entropy', 'table1/cifar10_fisher_sobolev_plain',
      'table1/cifar10_fisher_sobolev_kplus1', 'table1/cifar10_fisher_sobolev_kplus1_entropy']
  assert len(cells_lib.select_cells(tables=['table2'], datasets=['cifar10'])) == 12
  assert cells_lib.get_cell('gin/table2/svhn_gp_f.gin').id == 'table2/svhn_gp_f'
  with pytest.raises(errors.ConfigError, match='matches no cell'):
    cells_lib.select_cells(['table9/*'])
  with pytest.raises(errors.ConfigError, match='unknown table'):
    cells_lib.select_cells(tables=['table9'])


def test_bin_cells_lists_every_cell():
  result = subprocess.run([sys.executable, str(REPO_ROOT / 'bin' / 'cells')],
                          capture_output=True, text=True, timeout=60, check=True)
  lines = result.stdout.splitlines()[1:]
  assert len(lines) == 100
  assert any('table1/cifar10_fisher_sobolev_kplus1' in line and '16.29 ± 0.42' in line
             and 'gin/table1/cifar10_fisher_sobolev_kplus1.gin' in line for line in lines)
  counted = subprocess.run([sys.executable, str(REPO_ROOT / 'bin' / 'cells'), '--count',
                            '--table=table2,table3'],
                           capture_output=True, text=True, timeout=60, check=True).stdout
  assert 'table2' in counted and '24' in counted and 'total' in counted and '46' in counted


# What only the semi-supervised GAN reads: a supervised cell (Appendix C) binds none of it.
SSL_ONLY = (tuple(f'ssl.{field.name}' for field in dataclasses.fields(
    semi_supervised.SemiSupervised.Settings)) +
            ('train.generator_learning_rate', 'build_generator.ngf', 'build_generator.noise_dim',
             'Fisher.penalty_weight', 'Sobolev.penalty_weight', 'GradientPenalty.weight',
             'WeightClipping.clip_value'))
_UNBOUND = object()


@pytest.mark.parametrize('cell', cells_lib.select_cells(tables=['appendix_c']),
                         ids=lambda c: c.id)
def test_a_supervised_cell_binds_nothing_of_the_gan(cell):
  gin.clear_config()
  try:
    configurables.parse([str(cell.gin_path)], [])
    assert gin_queries.bound_value('train.mode') == 'supervised'
    assert gin_queries.bound_value('train.critic_learning_rate') == 2e-4
    bound = [name for name in SSL_ONLY if gin_queries.bound_value(name, _UNBOUND) is not _UNBOUND]
    assert not bound
  finally:
    gin.clear_config()

