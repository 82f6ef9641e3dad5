"""The study's own tables (tables/*.json, read by tf_ipmssl/table_file.py): every cell has its
gin file in gin/<table>/, the rows its committed runs.csv names, and the layout its
committed tables were written with."""
import csv
import pathlib

import pytest

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import table_file

STUDY = pathlib.Path(__file__).resolve().parents[1]
RESULTS = STUDY.parents[1] / 'docs' / 'results'


@pytest.mark.parametrize('name,count,base', [
    ('fashion_mnist_study', 10, 'bases/fashion_mnist_study.gin'),
    ('fashion_mnist_ssl', 10, 'bases/fashion_mnist_ssl.gin'),
])
def test_each_cell_has_its_gin_file_and_its_committed_runs(name, count, base):
  table = table_file.load(str(STUDY / 'tables' / f'{name}.json'))
  cells = cells_lib.select_cells(tables=[name])
  assert len(cells) == len(table.rows) * len(table.columns) == count
  for cell in cells:
    assert cell.gin_file == f'gin/{cell.id}.gin' and cell.gin_path.is_file()
    # The study's base, directly or through another cell of the table (the 100-label
    # cells include their 1000-label cell).
    text = cell.gin_path.read_text()
    assert f"include '{base}'" in text or f"include '{name}/" in text, cell.gin_file
  with open(RESULTS / name / 'runs.csv', newline='') as f:
    recorded = {row['cell'] for row in csv.DictReader(f)}
  assert recorded <= {cell.id for cell in cells} and recorded


def test_the_committed_table_was_written_with_this_layout():
  table = table_file.load(str(STUDY / 'tables' / 'fashion_mnist_ssl.json'))
  header = (RESULTS / 'fashion_mnist_ssl' / 'fashion_mnist_ssl.md').read_text().splitlines()
  assert header[0] == f'### {table.title}'
  assert any(line.startswith(f'| {table.row_header} | 100 | 1000 |') for line in header)
