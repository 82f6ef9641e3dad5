"""A table of your own (tf_ipmssl/table_file.py): read, checked, registered, selected only by
name, its cells' gin files in its gin folder; a file that is not a table is one ConfigError
that names what is wrong."""
import os

import pytest

from tests.table_files import TABLE
from tests.table_files import write_table
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from tf_ipmssl import table_file


def test_a_table_file_is_read_registered_and_selected_only_by_name(tmp_path):
  path = write_table(str(tmp_path))
  table = table_file.load(path)
  assert (table.name, table.has_paper, table.x_label) == ('own_table_test', False, 'labels')
  assert table.rows == (('supervised', 'supervised only'), ('kplus1', 'K+1, Ω_F(f)'))
  # The gin folder is relative to the file; outside the repository it is absolute.
  assert table.gin_dir == str((tmp_path / 'configs').resolve())
  cells = cells_lib.select_cells(tables=['own_table_test'])
  assert [c.id for c in cells] == [
      'own_table_test/fashion_mnist_supervised_100', 'own_table_test/fashion_mnist_supervised_1000',
      'own_table_test/fashion_mnist_kplus1_100', 'own_table_test/fashion_mnist_kplus1_1000']
  for cell in cells:
    assert cell.paper_error is None and cell.paper_text == '–'
    assert cell.gin_path.is_file() and cell.gin_path.parent == (tmp_path / 'configs').resolve()
    assert f'# {cell.row} {cell.column}' in cell.gin_path.read_text()
  assert cells[2].row_label == 'K+1, Ω_F(f)'
  assert cells_lib.layouts()['own_table_test'] == table
  # Not among the paper's cells, nor in '*' or the unfiltered selection; a pattern that
  # starts with its name selects from it.
  assert not set(cells) & set(cells_lib.all_cells())
  assert len(cells_lib.select_cells(['*'])) == len(cells_lib.select_cells()) == 100
  assert cells_lib.select_cells(['own_table_test/*_1000']) == (cells[1], cells[3])
  assert cells_lib.get_cell('own_table_test/fashion_mnist_kplus1_100') == cells[2]
  # The same table again changes nothing; through select_cells, with the paper's filters.
  assert table_file.load(path) == table
  assert table_file.select_cells(['own_table_test/*_kplus1_*'], table_files=[path]) == (
      cells[2], cells[3])


def test_a_gin_folder_in_the_repository_is_kept_relative_to_it(tmp_path):
  """Commands run from the repository root, and a --train_checkout has the same paths."""
  path = write_table(str(tmp_path), gin_files=False, name='own_table_in_repository',
                     gin_dir=os.path.relpath(cells_lib.GIN_DIR / 'table2', tmp_path))
  table = table_file.load(path)
  assert table.gin_dir == 'gin/table2'
  (cell,) = cells_lib.select_cells(['own_table_in_repository/fashion_mnist_kplus1_100'])
  assert cell.gin_file == 'gin/table2/fashion_mnist_kplus1_100.gin'
  # Without gin_dir: the checkout's gin/<name>/, as the paper's cells.
  path = write_table(str(tmp_path), gin_files=False, name='own_table_default', gin_dir=None)
  assert table_file.load(path).gin_dir is None
  assert cells_lib.get_cell('own_table_default/fashion_mnist_kplus1_100').gin_file == (
      'gin/own_table_default/fashion_mnist_kplus1_100.gin')


@pytest.mark.parametrize('changes,message', [
    ({'title': None}, 'it lacks title'),
    ({'colour': 'red'}, 'unknown key(s) colour'),
    ({'name': 'my table'}, '"name" \'my table\' may hold only letters, digits and _'),
    ({'name': 'table2'}, "table name 'table2' is taken by one of the paper's tables"),
    ({'rows': []}, '"rows" must be a non-empty list of [key, label] lists of strings'),
    ({'rows': [['a', 'A'], ['a', 'B']]}, 'row key a is given twice'),
    ({'rows': [['a-b', 'A']]}, "row key 'a-b' may hold only letters, digits and _"),
    ({'columns': [['mnist', '', 'MNIST']]}, "column dataset 'mnist' is unknown: use one of"),
    ({'columns': [['svhn', '1k']]},
     '"columns" must be a non-empty list of [dataset, key, header] lists of strings'),
    ({'x_label': 3}, '"x_label" must be a non-empty string'),
    ({'name': 'runs'}, '"name" \'runs\' is the name of a file the sweep writes beside its '
                       'tables: choose another'),
    ({'rows': [['x', 'X'], ['x_y', 'XY']], 'x_label': None,
      'columns': [['fashion_mnist', 'y_z', 'a'], ['fashion_mnist', 'z', 'b']]},
     'two cells would have the id own_table_refused/fashion_mnist_x_y_z'),
    ({'columns': [['fashion_mnist', '100', '100 labels']]},
     'with "x_label" each column\'s header is its number (the plot\'s x), not \'100 labels\''),
])
def test_a_file_that_is_not_a_table_is_one_error_naming_what_is_wrong(tmp_path, changes,
                                                                      message):
  path = write_table(str(tmp_path), gin_files=False, **{'name': 'own_table_refused', **changes})
  with pytest.raises(errors.ConfigError) as raised:
    table_file.load(path)
  assert message in str(raised.value)
  assert str(raised.value).startswith(f'--table_file={path}: ')
  assert 'own_table_refused' not in cells_lib.layouts()


def test_another_table_of_a_registered_name_and_unreadable_files_are_refused(tmp_path):
  for folder in ('first', 'second'):
    os.makedirs(tmp_path / folder)
  table_file.load(write_table(str(tmp_path / 'first'), name='own_table_twice'))
  second = write_table(str(tmp_path / 'second'), name='own_table_twice', title='Another')
  with pytest.raises(errors.ConfigError, match="table name 'own_table_twice' is taken by "
                                               'another table: give your table another name'):
    table_file.load(second)
  assert cells_lib.layouts()['own_table_twice'].title == TABLE['title']
  with pytest.raises(errors.ConfigError, match='no such file'):
    table_file.load(str(tmp_path / 'missing.json'))
  (tmp_path / 'bad.json').write_text('{"name": ')
  with pytest.raises(errors.ConfigError, match='cannot be read as JSON'):
    table_file.load(str(tmp_path / 'bad.json'))
  (tmp_path / 'list.json').write_text('[]')
  with pytest.raises(errors.ConfigError, match='the file holds no JSON object'):
    table_file.load(str(tmp_path / 'list.json'))
