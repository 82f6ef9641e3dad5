"""Every result cell of the paper as plain data: its gin config and the paper's number.

A *cell* is one number of one of the paper's result tables: Table 1 (critic formulations),
Table 2 (constraint placements), Table 3 (critic normalization), the Appendix A table
(Table 4: CIFAR-10 error vs number of labels) and the Appendix C table (purely supervised
baselines). Each cell has

- an id `<table>/<dataset>_<row>[_<column>]`, e.g. `table1/cifar10_fisher_kplus1`;
- a gin file `gin/<id>.gin` that trains it (see gin/README.md for the naming scheme);
- the paper's test error (%), mean and, where the paper gives one, std over 5 seeds.

A `Table` lists its rows and columns in the paper's order, so that results can be laid out
as the paper's tables (`tf_ipmssl.sweep.tables`).

A *table of your own* has the same machinery and no paper numbers: a JSON file
(`table_file.py`, `bin/sweep --table_file`) registered here (`register_table`), every row ×
column a cell whose gin file lies in the table's gin folder. Its cells are selected only by
naming the table (`tables=` or an id pattern that starts with its name), so `all_cells()`
and '*' stay the paper's 100 cells. This module imports neither TensorFlow nor gin:
`bin/cells` and `bin/sweep --dry_run` stay instant.
"""
import dataclasses
import fnmatch
import os
import pathlib
from typing import Dict, Optional, Sequence, Tuple

from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
GIN_DIR = REPO_ROOT / 'gin'

# Dataset name -> its name in table headers, from the registry of datasets.
DATASET_NAMES = {spec.name: spec.title for spec in dataset_specs.REGISTRY.values()}


@dataclasses.dataclass(frozen=True)
class Table:
  """A paper table: rows and columns as (key, label) in the paper's order.

  Attributes:
    name: 'table1', 'table2', 'table3', 'appendix_a' or 'appendix_c'.
    title: the paper's caption, shortened.
    rows: ((row key, row label), ...).
    columns: ((dataset, column key, header), ...); the column key is '' where the
      table has one column per dataset (Table 2).
    row_header: what the rows are, the header of the row-label column.
    x_label: for tables whose columns are numbers of labels (Appendix A), the axis
      label of an error-vs-labels plot; None otherwise.
    has_paper: whether the paper reports these numbers (False for a table of your own).
    gin_dir: where its cells' gin files are (a table of your own): a path relative to the
      repository root, or absolute; None: gin/<name>.
  """
  name: str
  title: str
  rows: Tuple[Tuple[str, str], ...]
  columns: Tuple[Tuple[str, str, str], ...]
  row_header: str
  x_label: Optional[str] = None
  has_paper: bool = True
  gin_dir: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Cell:
  """One number of a paper table and the configuration that reproduces it.

  Attributes:
    table: the Table's name.
    dataset: 'cifar10' or 'svhn' (the paper's dataset of this number).
    row: the Table row key.
    column: the Table column key ('' for Table 2).
    paper_error: the paper's test error in %; None for a cell of a table of your own.
    paper_std: the paper's std over seeds, None where the paper gives none.
    gin_dir: its table's `gin_dir` (None: gin/<table>).
  """
  table: str
  dataset: str
  row: str
  column: str
  paper_error: Optional[float]
  paper_std: Optional[float] = None
  gin_dir: Optional[str] = None

  @property
  def id(self) -> str:
    return cell_id(self.table, self.dataset, self.row, self.column)

  @property
  def row_label(self) -> str:
    """The label of its row in its Table, e.g. 'Ω_F(f), Ω_S(f-)'."""
    return dict(layouts()[self.table].rows)[self.row]

  @property
  def gin_file(self) -> str:
    """The gin file: relative to the repository root (where bin/ programs run), or absolute
    for a table of your own whose gin folder lies outside it."""
    if self.gin_dir is None:
      return f'gin/{self.id}.gin'
    return os.path.join(self.gin_dir, self.id.split('/', 1)[1] + '.gin')

  @property
  def gin_path(self) -> pathlib.Path:
    return REPO_ROOT / self.gin_file

  @property
  def paper_text(self) -> str:
    """The paper's number as printed: '17.82 ± 0.43' or '40.85'."""
    return format_error(self.paper_error, self.paper_std)


def cell_id(table: str, dataset: str, row: str, column: str) -> str:
  """'<table>/<dataset>_<row>[_<column>]', e.g. 'table1/cifar10_fisher_kplus1'."""
  suffix = f'_{column}' if column else ''
  return f'{table}/{dataset}_{row}{suffix}'


def repository_path(path) -> str:
  """`path` relative to the repository root where it lies in it (bin/ programs run there,
  and a --train_checkout holds the same relative paths), else absolute; symbolic links
  resolved."""
  resolved = pathlib.Path(path).resolve()
  try:
    return str(resolved.relative_to(REPO_ROOT))
  except ValueError:
    return str(resolved)


def format_error(mean: Optional[float], std: Optional[float] = None) -> str:
  if mean is None:
    return '–'
  if std is None:
    return f'{mean:.2f}'
  return f'{mean:.2f} ± {std:.2f}'


# ----- The tables' layouts. -----

_FORMULATIONS = (('plain', 'plain ⟨v,Φ(x)⟩'), ('kplus1', 'K+1'), ('kplus1_entropy', 'K+1, f+^H'))
_NORMALIZATION_ROWS = (
    ('batch_norm', 'Batch Normalization'),
    ('layer_norm_singleton_per_channel', 'LN (μ,σ² ∈ R^{1×1×1}) (g,b ∈ R^{C×1×1})'),
    ('layer_norm_singleton_per_pixel', 'LN (μ,σ² ∈ R^{1×1×1}) (g,b ∈ R^{1×H×W})'),
    ('layer_norm_per_channel_per_channel', 'LN (μ,σ² ∈ R^{C×1×1}) (g,b ∈ R^{C×1×1})'),
    ('layer_norm_per_channel_per_pixel', 'LN (μ,σ² ∈ R^{C×1×1}) (g,b ∈ R^{1×H×W})'),
    ('none', 'No Normalization'),
)

TABLES: Dict[str, Table] = {t.name: t for t in (
    Table(
        name='table1',
        title='Table 1: critic formulations (no normalization), test error %',
        rows=(('wgan_clip', 'WGAN clip'), ('wgan_gp', 'WGAN-GP'), ('fisher', 'Fisher'),
              ('sobolev', 'Sobolev'), ('fisher_sobolev', 'Fisher + Sobolev')),
        columns=tuple((d, key, f'{DATASET_NAMES[d]} ({n}) {label}')
                      for d, n in (('cifar10', '4k'), ('svhn', '1k'))
                      for key, label in _FORMULATIONS),
        row_header='IPM'),
    Table(
        name='table2',
        title='Table 2: K+1 critic, constraints on f, f- or f+, test error %',
        rows=(('gp_f', 'Ω_GP(f)'), ('gp_fneg', 'Ω_GP(f-)'), ('sobolev_f', 'Ω_S(f)'),
              ('sobolev_fneg', 'Ω_S(f-)'), ('fisher_f', 'Ω_F(f)'), ('fisher_fneg', 'Ω_F(f-)'),
              ('fisher_f_sobolev_f', 'Ω_F(f), Ω_S(f)'),
              ('fisher_f_sobolev_fneg', 'Ω_F(f), Ω_S(f-)'),
              ('fisher_fneg_sobolev_f', 'Ω_F(f-), Ω_S(f)'),
              ('fisher_fneg_sobolev_fneg', 'Ω_F(f-), Ω_S(f-)'),
              ('fisher_fpos_sobolev_f', 'Ω_F(f+), Ω_S(f)'),
              ('fisher_fpos_sobolev_fneg', 'Ω_F(f+), Ω_S(f-)')),
        columns=(('cifar10', '', 'CIFAR-10 (4k)'), ('svhn', '', 'SVHN (1k)')),
        row_header='constraints'),
    Table(
        name='table3',
        title='Table 3: critic normalization, K+1 critic, test error %',
        rows=_NORMALIZATION_ROWS,
        columns=tuple((d, key, f'{DATASET_NAMES[d]} ({n}) {label}')
                      for d, n in (('cifar10', '4k'), ('svhn', '1k'))
                      for key, label in (('fisher', 'Fisher'),
                                         ('fisher_sobolev', 'Fisher + Sobolev'))),
        row_header='critic normalization'),
    Table(
        name='appendix_a',
        title='Appendix A: CIFAR-10 test error % vs number of labels, K+1 critic',
        rows=(('fisher_batch_norm', 'Fisher, batch norm'),
              ('fisher_layer_norm', 'Fisher, layer norm'),
              ('fisher_none', 'Fisher, no norm'),
              ('fisher_sobolev_none', 'Fisher + Sobolev, no norm (n_c = 1)')),
        columns=tuple(('cifar10', f'{n}k', f'{n * 1000}') for n in (1, 2, 4, 8)),
        row_header='model',
        x_label='number of labeled examples'),
    Table(
        name='appendix_c',
        title='Appendix C: purely supervised baseline (critic CNN, CE only), test error %',
        rows=(('batch_norm', 'BN'),
              ('layer_norm', 'LN (μ,σ² ∈ R^{1×1×1}) (g,b ∈ R^{C×1×1})'),
              ('none', 'No Normalization')),
        columns=(('cifar10', '4k', 'CIFAR-10 4k'), ('cifar10', 'all', 'CIFAR-10 all'),
                 ('svhn', '1k', 'SVHN 1k'), ('svhn', 'all', 'SVHN all')),
        row_header='critic normalization'),
)}

# ----- Tables of your own (table_file.py), registered while the process runs. -----

_OWN_TABLES: Dict[str, Table] = {}


def layouts() -> Dict[str, Table]:
  """Every table by name: the paper's, then those registered (register_table)."""
  return {**TABLES, **_OWN_TABLES}

# ----- The paper's numbers: {(dataset, row, column): (mean, std or None)}. -----

_PAPER: Dict[str, Dict[Tuple[str, str, str], Tuple[float, Optional[float]]]] = {
    'table1': {
        ('cifar10', 'wgan_clip', 'plain'): (40.85, None),
        ('cifar10', 'wgan_gp', 'plain'): (44.64, 0.61),
        ('cifar10', 'wgan_gp', 'kplus1'): (48.92, 0.50),
        ('cifar10', 'wgan_gp', 'kplus1_entropy'): (48.81, 0.41),
        ('cifar10', 'fisher', 'plain'): (18.95, 0.32),
        ('cifar10', 'fisher', 'kplus1'): (17.82, 0.43),
        ('cifar10', 'fisher', 'kplus1_entropy'): (17.12, 0.11),
        ('cifar10', 'sobolev', 'plain'): (80.45, 0.59),
        ('cifar10', 'sobolev', 'kplus1'): (45.35, 0.62),
        ('cifar10', 'sobolev', 'kplus1_entropy'): (45.27, 0.33),
        ('cifar10', 'fisher_sobolev', 'plain'): (21.44, 0.74),
        ('cifar10', 'fisher_sobolev', 'kplus1'): (16.29, 0.42),
        ('cifar10', 'fisher_sobolev', 'kplus1_entropy'): (22.68, 0.31),
        ('svhn', 'wgan_clip', 'plain'): (28.65, None),
        ('svhn', 'wgan_gp', 'plain'): (17.51, 0.23),
        ('svhn', 'wgan_gp', 'kplus1'): (31.59, 1.75),
        ('svhn', 'wgan_gp', 'kplus1_entropy'): (33.85, 1.46),
        ('svhn', 'fisher', 'plain'): (15.59, 0.67),
        ('svhn', 'fisher', 'kplus1'): (9.46, 0.32),
        ('svhn', 'fisher', 'kplus1_entropy'): (11.93, 0.26),
        ('svhn', 'sobolev', 'plain'): (80.46, 0.62),
        ('svhn', 'sobolev', 'kplus1'): (28.46, 1.04),
        ('svhn', 'sobolev', 'kplus1_entropy'): (26.00, 0.43),
        ('svhn', 'fisher_sobolev', 'plain'): (13.23, 0.53),
        ('svhn', 'fisher_sobolev', 'kplus1'): (8.88, 0.84),
        ('svhn', 'fisher_sobolev', 'kplus1_entropy'): (12.01, 0.19),
    },
    'table2': {
        (dataset, row, ''): (error, None)
        for row, cifar10, svhn in (
            ('gp_f', 49.28, 34.05), ('gp_fneg', 73.78, 70.61),
            ('sobolev_f', 45.55, 26.15), ('sobolev_fneg', 71.38, 20.04),
            ('fisher_f', 17.49, 9.16), ('fisher_fneg', 72.08, 38.33),
            ('fisher_f_sobolev_f', 45.55, 29.30), ('fisher_f_sobolev_fneg', 17.08, 8.27),
            ('fisher_fneg_sobolev_f', 47.15, 26.31), ('fisher_fneg_sobolev_fneg', 68.62, 37.50),
            ('fisher_fpos_sobolev_f', 47.79, 27.99), ('fisher_fpos_sobolev_fneg', 17.12, 8.01))
        for dataset, error in (('cifar10', cifar10), ('svhn', svhn))
    },
    'table3': {
        # Batch norm with Sobolev is '–' in the paper (BN couples the examples of a batch,
        # which a gradient constraint cannot allow): no cell.
        ('cifar10', 'batch_norm', 'fisher'): (24.14, 0.26),
        ('cifar10', 'layer_norm_singleton_per_channel', 'fisher'): (16.45, 0.42),
        ('cifar10', 'layer_norm_singleton_per_channel', 'fisher_sobolev'): (16.79, 0.11),
        ('cifar10', 'layer_norm_singleton_per_pixel', 'fisher'): (16.81, 0.36),
        ('cifar10', 'layer_norm_singleton_per_pixel', 'fisher_sobolev'): (17.24, 0.34),
        ('cifar10', 'layer_norm_per_channel_per_channel', 'fisher'): (20.44, 0.24),
        ('cifar10', 'layer_norm_per_channel_per_channel', 'fisher_sobolev'): (20.09, 0.43),
        ('cifar10', 'layer_norm_per_channel_per_pixel', 'fisher'): (19.93, 0.34),
        ('cifar10', 'layer_norm_per_channel_per_pixel', 'fisher_sobolev'): (19.85, 0.29),
        ('cifar10', 'none', 'fisher'): (17.73, 0.56),
        ('cifar10', 'none', 'fisher_sobolev'): (16.33, 0.15),
        ('svhn', 'batch_norm', 'fisher'): (10.76, 0.28),
        ('svhn', 'layer_norm_singleton_per_channel', 'fisher'): (8.78, 0.68),
        ('svhn', 'layer_norm_singleton_per_channel', 'fisher_sobolev'): (9.02, 0.29),
        ('svhn', 'layer_norm_singleton_per_pixel', 'fisher'): (8.55, 0.29),
        ('svhn', 'layer_norm_singleton_per_pixel', 'fisher_sobolev'): (8.70, 0.67),
        ('svhn', 'layer_norm_per_channel_per_channel', 'fisher'): (9.18, 0.12),
        ('svhn', 'layer_norm_per_channel_per_channel', 'fisher_sobolev'): (9.19, 0.21),
        ('svhn', 'layer_norm_per_channel_per_pixel', 'fisher'): (9.69, 0.16),
        ('svhn', 'layer_norm_per_channel_per_pixel', 'fisher_sobolev'): (9.29, 0.16),
        ('svhn', 'none', 'fisher'): (9.06, 0.46),
        ('svhn', 'none', 'fisher_sobolev'): (8.31, 0.60),
    },
    'appendix_a': {
        # The three Fisher rows are quoted by the paper from the Fisher GAN paper
        # (Mroueh & Sercu, 2017); the batch-norm row has no std there.
        ('cifar10', row, column): (mean, std)
        for row, values in (
            ('fisher_batch_norm', ((36.80, None), (30.43, None), (24.35, None), (21.35, None))),
            ('fisher_layer_norm', ((19.74, 0.21), (17.87, 0.38), (16.13, 0.53), (14.81, 0.16))),
            ('fisher_none', ((21.15, 0.54), (18.21, 0.30), (16.74, 0.19), (14.80, 0.15))),
            ('fisher_sobolev_none', ((20.14, 0.21), (17.38, 0.10), (15.77, 0.19),
                                     (14.20, 0.08))))
        for column, (mean, std) in zip(('1k', '2k', '4k', '8k'), values)
    },
    'appendix_c': {
        ('cifar10', 'batch_norm', '4k'): (34.17, 0.16),
        ('cifar10', 'batch_norm', 'all'): (11.47, 0.10),
        ('cifar10', 'layer_norm', '4k'): (38.85, 0.37),
        ('cifar10', 'layer_norm', 'all'): (14.01, 0.25),
        ('cifar10', 'none', '4k'): (39.78, 0.28),
        ('cifar10', 'none', 'all'): (14.25, 0.25),
        ('svhn', 'batch_norm', '1k'): (21.67, 0.39),
        ('svhn', 'batch_norm', 'all'): (4.11, 0.04),
        ('svhn', 'layer_norm', '1k'): (21.57, 0.36),
        ('svhn', 'layer_norm', 'all'): (3.81, 0.10),
        ('svhn', 'none', '1k'): (21.89, 0.36),
        ('svhn', 'none', 'all'): (3.92, 0.08),
    },
}


def _build_cells() -> Tuple[Cell, ...]:
  """The cells in the paper's order: table, then row, then column."""
  cells = []
  for table in TABLES.values():
    numbers = _PAPER[table.name]
    for row, _ in table.rows:
      for dataset, column, _ in table.columns:
        if (dataset, row, column) in numbers:
          mean, std = numbers[(dataset, row, column)]
          cells.append(Cell(table.name, dataset, row, column, mean, std))
  return tuple(cells)


CELLS: Tuple[Cell, ...] = _build_cells()
_OWN_CELLS: Dict[str, Tuple[Cell, ...]] = {}  # Table name -> its cells.
_BY_ID: Dict[str, Cell] = {cell.id: cell for cell in CELLS}


def register_table(table: Table) -> Tuple[Cell, ...]:
  """Adds a table of your own (no paper numbers), every row × column a cell; returns its
  cells. Registering the same table again changes nothing; another table of a known name is
  refused."""
  known = layouts().get(table.name)
  if known == table:
    return _OWN_CELLS[table.name]
  if known is not None:
    kind = "one of the paper's tables" if table.name in TABLES else 'another table'
    raise errors.ConfigError(f"table name '{table.name}' is taken by {kind}: give your table "
                             'another name')
  cells = tuple(Cell(table.name, dataset, row, column, None, gin_dir=table.gin_dir)
                for row, _ in table.rows for dataset, column, _ in table.columns)
  _OWN_TABLES[table.name] = table
  _OWN_CELLS[table.name] = cells
  _BY_ID.update((cell.id, cell) for cell in cells)
  return cells


def all_cells() -> Tuple[Cell, ...]:
  """The paper's cells (not those of a table of your own)."""
  return CELLS


def get_cell(name: str) -> Cell:
  """The cell with this id (an optional trailing '.gin' and leading 'gin/' are ignored)."""
  key = name.removeprefix('gin/').removesuffix('.gin')
  if key not in _BY_ID:
    raise errors.ConfigError(f"unknown cell '{name}'; list them with `bin/cells` (a cell of "
                             'a table of your own: give its --table_file too)')
  return _BY_ID[key]


def cell_at(table: str, dataset: str, row: str, column: str) -> Optional[Cell]:
  """The cell at a position of a table, None where the paper has no number ('–')."""
  return _BY_ID.get(cell_id(table, dataset, row, column))


def select_cells(patterns: Sequence[str] = (), tables: Sequence[str] = (),
                 datasets: Sequence[str] = ()) -> Tuple[Cell, ...]:
  """Cells matching any id or glob pattern (or all, if none) and the table/dataset filters.

  The cells of a table of your own count only where `tables` names it or a pattern starts
  with its name ('my_table/...'); otherwise the candidates are the paper's cells.

  Args:
    patterns: cell ids or fnmatch patterns, e.g. 'table1/cifar10_fisher_*'.
    tables: keep only cells of these tables (names as in layouts()).
    datasets: keep only cells of these datasets.

  Returns:
    The matching cells in the paper's order.

  Raises:
    ConfigError: a pattern, table or dataset that matches nothing known.
  """
  for table in tables:
    if table not in layouts():
      raise errors.ConfigError(
          f"unknown table '{table}'; use one of {list(layouts())}, or describe a table of your "
          'own in a JSON file and give it with --table_file (README, "Reproducing the '
          'paper\'s tables")')
  for dataset in datasets:
    if dataset not in DATASET_NAMES:
      raise errors.ConfigError(
          f"unknown dataset '{dataset}'; the cells use {list(DATASET_NAMES)}")
  patterns = [p.removeprefix('gin/').removesuffix('.gin') for p in patterns]
  named = set(tables) | {p.split('/')[0] for p in patterns}
  candidates = CELLS + tuple(cell for name, cells in _OWN_CELLS.items() if name in named
                             for cell in cells)
  for pattern in patterns:
    if not any(fnmatch.fnmatchcase(cell.id, pattern) for cell in candidates):
      raise errors.ConfigError(
          f"'{pattern}' matches no cell id; list them with `bin/cells` (with --table_file "
          "for a table of your own; ids look like table1/cifar10_fisher_kplus1; glob "
          "patterns such as 'table2/svhn_*' work)")
  return tuple(
      cell for cell in candidates
      if (not patterns or any(fnmatch.fnmatchcase(cell.id, p) for p in patterns))
      and (not tables or cell.table in tables)
      and (not datasets or cell.dataset in datasets))
