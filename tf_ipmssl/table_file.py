"""A table of your own: a JSON file that lays out gin configs as rows × columns, so that
`bin/sweep --table_file=FILE` trains every cell over seeds and writes the table (mean ± std,
n per cell) as it does the paper's, without paper numbers.

  {
    "name": "my_table",
    "title": "My labels: K+1 vs supervised, test error %",
    "row_header": "critic",
    "rows": [["supervised", "supervised only"], ["kplus1", "K+1, Ω_F(f)"]],
    "columns": [["fashion_mnist", "100", "100"], ["fashion_mnist", "1000", "1000"]],
    "x_label": "labels",
    "gin_dir": "my_gin"
  }

- `name`: the table's name and the first part of its cells' ids,
  `<name>/<dataset>_<row>[_<column>]` (letters, digits and '_'; not a paper table's, nor a
  name the sweep's own files take: tables, runs, class_errors, comparison).
- `rows`: [key, label] in the table's order; `columns`: [dataset, key, header], the key ''
  where the table has one column per dataset. Every row × column is a cell, and no two may
  make the same id.
- `x_label` (optional): the columns are numbers (of labels, say), each column's header its
  number: the plot is error against them, with this axis label; otherwise the plot is
  bars.
- `gin_dir` (optional): the folder of the cells' gin files, relative to this file's folder
  or absolute; cell `<name>/<dataset>_<row>[_<column>]` trains with
  `<gin_dir>/<dataset>_<row>[_<column>].gin`. Without it: `gin/<name>/` of the checkout. A
  folder inside the repository is named relative to it, so that `bin/sweep
  --train_checkout` reads the checkout's copy (commit the gin files); one outside is named
  by its absolute path, in the runs' records too: keep it where it is while its sweep
  lasts.

Standard library only, as cells.py: `bin/cells` and `bin/sweep --dry_run` stay instant.
"""
import json
import os
import re
from typing import Tuple

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors

_REQUIRED = ('name', 'title', 'row_header', 'rows', 'columns')
# Names of the files a sweep writes beside each table's <name>.md and <name>.csv.
_RESERVED = ('tables', 'runs', 'class_errors', 'comparison')
_OPTIONAL = ('x_label', 'gin_dir')
_KEY = re.compile(r'[A-Za-z0-9_]+')


def load(path: str) -> cells_lib.Table:
  """The table the JSON file at `path` describes, registered with cells.py (its cells are
  then known to get_cell and select_cells); a ConfigError naming the fix for a file that is
  missing, not JSON, or not a table."""
  try:
    with open(path, encoding='utf-8') as f:
      spec = json.load(f)
  except FileNotFoundError:
    raise errors.ConfigError(f'--table_file={path}: no such file') from None
  except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
    raise errors.ConfigError(f'--table_file={path} cannot be read as JSON ({e}): see '
                             'tf_ipmssl/table_file.py for the format') from None
  table = _table(spec, path)
  try:
    cells_lib.register_table(table)
  except errors.ConfigError as e:
    raise errors.ConfigError(f'--table_file={path}: {e}') from None
  return table


def _table(spec, path) -> cells_lib.Table:
  def refuse(what):
    raise errors.ConfigError(f'--table_file={path}: {what} (the format: '
                             'tf_ipmssl/table_file.py)')

  if not isinstance(spec, dict):
    refuse('the file holds no JSON object')
  missing = [k for k in _REQUIRED if k not in spec]
  unknown = sorted(set(spec) - set(_REQUIRED) - set(_OPTIONAL))
  if missing or unknown:
    refuse('; '.join(part for part in (
        missing and f'it lacks {", ".join(missing)}',
        unknown and f'unknown key(s) {", ".join(unknown)}') if part))
  for key in ('name', 'title', 'row_header') + tuple(k for k in _OPTIONAL if k in spec):
    if not isinstance(spec[key], str) or not spec[key]:
      refuse(f'"{key}" must be a non-empty string')
  name = spec['name']
  if not _KEY.fullmatch(name):
    refuse(f'"name" {name!r} may hold only letters, digits and _')
  if name in _RESERVED:
    refuse(f'"name" {name!r} is the name of a file the sweep writes beside its tables: '
           'choose another')
  rows = _pairs(spec['rows'], 2, 'rows', '[key, label]', refuse)
  columns = _pairs(spec['columns'], 3, 'columns', '[dataset, key, header]', refuse)
  for key, _ in rows:
    if not _KEY.fullmatch(key):
      refuse(f'row key {key!r} may hold only letters, digits and _')
  for dataset, key, _ in columns:
    if dataset not in cells_lib.DATASET_NAMES:
      refuse(f'column dataset {dataset!r} is unknown: use one of '
             f'{list(cells_lib.DATASET_NAMES)}')
    if key and not _KEY.fullmatch(key):
      refuse(f'column key {key!r} may hold only letters, digits and _ (or be "")')
  for what, keys in (('row key', [r[0] for r in rows]),
                     ('column', [f'{c[0]} {c[1]!r}' for c in columns])):
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
      refuse(f'{what} {repeated[0]} is given twice')
  ids = [cells_lib.cell_id(name, dataset, row, column)
         for row, _ in rows for dataset, column, _ in columns]
  same = sorted({i for i in ids if ids.count(i) > 1})
  if same:
    refuse(f'two cells would have the id {same[0]} (a row key and a column key that join as '
           'another pair does): rename one')
  if 'x_label' in spec:
    not_numbers = [header for _, _, header in columns if not header.isdigit()]
    if not_numbers:
      refuse(f'with "x_label" each column\'s header is its number (the plot\'s x), not '
             f'{not_numbers[0]!r}: drop "x_label" for a bar plot, or give numbers')
  gin_dir = spec.get('gin_dir')
  if gin_dir is not None:
    gin_dir = cells_lib.repository_path(
        os.path.join(os.path.dirname(os.path.abspath(path)), gin_dir))
  return cells_lib.Table(name=name, title=spec['title'], rows=rows, columns=columns,
                         row_header=spec['row_header'], x_label=spec.get('x_label'),
                         has_paper=False, gin_dir=gin_dir)


def _pairs(value, size, what, shape, refuse) -> Tuple[Tuple[str, ...], ...]:
  if (not isinstance(value, list) or not value
      or not all(isinstance(item, list) and len(item) == size
                 and all(isinstance(part, str) for part in item) for item in value)):
    refuse(f'"{what}" must be a non-empty list of {shape} lists of strings')
  return tuple(tuple(item) for item in value)


def select_cells(patterns=(), tables=(), datasets=(), table_files=()
                 ) -> Tuple[cells_lib.Cell, ...]:
  """cells.select_cells with the tables of `table_files` loaded and named too: a program's
  --cells/--table/--dataset/--table_file. A table file's cells are all of its table's, or
  those `patterns` name."""
  names = list(tables) + [load(path).name for path in table_files]
  return cells_lib.select_cells(patterns, names, datasets)
