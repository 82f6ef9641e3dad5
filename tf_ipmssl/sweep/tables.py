"""A sweep's results (results.py) laid out as the paper's tables: markdown and CSV, with the
paper's number beside ours (a table of your own, which has no paper numbers, shows ours
alone), the per-class errors, and the files a sweep writes (`write_tables`).
"""
import csv
import io
import os
from typing import Dict, List, Optional, Tuple

from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import results as results_lib

# {cell id: its results}, as results.collect gives them.
Results = Dict[str, results_lib.CellResult]


def tables_with_results(results: Results) -> List[cells_lib.Table]:
  """The tables (the paper's, then those of your own), in order, that hold a finished run."""
  names = {r.cell.table for r in results.values() if r.n}
  return [t for t in cells_lib.layouts().values() if t.name in names]


def _result_at(results, table, dataset, row, column) -> Tuple[Optional[cells_lib.Cell],
                                                              Optional[results_lib.CellResult]]:
  cell = cells_lib.cell_at(table.name, dataset, row, column)
  if cell is None:
    return None, None
  return cell, results.get(cell.id) or results_lib.CellResult(cell)


def foreign_datasets(table: cells_lib.Table, results) -> List[str]:
  """Datasets our runs used that differ from the paper's dataset of their cell."""
  foreign = []
  for result in results.values():
    if result.cell.table == table.name:
      foreign += [d for d in result.datasets if d != result.cell.dataset and d not in foreign]
  return foreign


def markdown_table(table: cells_lib.Table, results: Results) -> str:
  """The paper's layout; each column of ours is followed by the paper's number (if any)."""
  paper = table.has_paper
  header = [table.row_header]
  for _, _, title in table.columns:
    header += [title, 'paper'] if paper else [title]
  lines = [f'### {table.title}', '',
           '| ' + ' | '.join(header) + ' |',
           '|' + '|'.join(['---'] + ['---:'] * (len(header) - 1)) + '|']
  for row, label in table.rows:
    entries = [label]
    for dataset, column, _ in table.columns:
      cell, result = _result_at(results, table, dataset, row, column)
      if cell is None:
        entries += ['', ''] if paper else ['']
      else:
        entries += [result.text, cell.paper_text] if paper else [result.text]
    lines.append('| ' + ' | '.join(entries) + ' |')
  note = ('Ours: test error % at the best-validation step, mean ± std over n seeds '
          '(label split and initialization both vary)')
  lines += ['', note + ('; paper: mean ± std over 5 runs.' if paper else '.')]
  unfinished = sum(r.unfinished for r in results.values() if r.cell.table == table.name)
  if unfinished:
    lines.append(f'{unfinished} unfinished run(s) not counted.')
  foreign = foreign_datasets(table, results)
  if foreign:
    lines.append(f"Our runs trained on {', '.join(foreign)}, not on the paper's datasets "
                 '(e.g. gin/presets/cpu_quick.gin): they are not comparable with the paper '
                 'column.')
  return '\n'.join(lines) + '\n'


def csv_table(table: cells_lib.Table, results: Results) -> str:
  """The paper's layout, one row per table row; per column: mean, std, n, paper, paper std
  (the last two only for the paper's tables)."""
  out = io.StringIO()
  writer = csv.writer(out, lineterminator='\n')
  fields = ('mean', 'std', 'n') + (('paper', 'paper std') if table.has_paper else ())
  header = [table.row_header]
  for _, _, title in table.columns:
    header += [f'{title} {field}' for field in fields]
  writer.writerow(header)

  def number(value):
    return '' if value is None else f'{value:.4f}'

  for row, label in table.rows:
    entries = [label]
    for dataset, column, _ in table.columns:
      cell, result = _result_at(results, table, dataset, row, column)
      if cell is None:
        entries += [''] * len(fields)
        continue
      entries += [number(result.mean), number(result.std), str(result.n)]
      if table.has_paper:
        entries += [f'{cell.paper_error:.2f}',
                    '' if cell.paper_std is None else f'{cell.paper_std:.2f}']
    writer.writerow(entries)
  return out.getvalue()


def class_errors_csv(results: Results) -> Optional[str]:
  """One line per finished run with per-class results: cell, seed, the balanced test error,
  then the test error of each class (a column per class name, in label order, the classes of
  every dataset in the results), at the reported step; blank for a class the run has not.
  None where no run has per-class results (runs trained before them)."""
  rows = [(result.cell.id, run) for result in results.values() for run in result.runs
          if run.class_errors is not None]
  if not rows:
    return None
  names = list(dict.fromkeys(name for _, run in rows for name, _ in run.class_errors))
  out = io.StringIO()
  writer = csv.writer(out, lineterminator='\n')
  writer.writerow(['cell', 'seed', 'balanced_test_error'] + names)
  for cell_id, run in rows:
    errors = dict(run.class_errors)
    writer.writerow([cell_id, run.seed, results_lib.blank(run.balanced_error)] +
                    [results_lib.blank(errors.get(name)) for name in names])
  return out.getvalue()


def class_errors_markdown(results: Results) -> Optional[str]:
  """Per cell, the mean over its runs with per-class results of the balanced test error and
  of each class's test error, and their number n; None where no run has them."""
  rows = []
  names = []
  for result in results.values():
    runs = [run for run in result.runs if run.class_errors is not None]
    if not runs:
      continue
    names.extend(name for run in runs for name, _ in run.class_errors)
    rows.append((result.cell.id, runs))
  if not rows:
    return None
  names = list(dict.fromkeys(names))

  def mean(values):
    values = [v for v in values if v is not None]
    return f'{sum(values) / len(values):.2f}' if values else ''
  lines = ['| cell | n | balanced | ' + ' | '.join(names) + ' |',
           '|---|---|---|' + '---|' * len(names)]
  for cell_id, runs in rows:
    per_class = [mean(dict(run.class_errors).get(name) for run in runs) for name in names]
    lines.append(f'| {cell_id} | {len(runs)} | {mean(run.balanced_error for run in runs)} | ' +
                 ' | '.join(per_class) + ' |')
  return ('Test error (%) by class at the reported step, mean over runs; balanced: the mean '
          'of the class errors.\n\n' + '\n'.join(lines) + '\n')


def write_tables(results: Results, tables_dir: str) -> List[str]:
  """Writes <table>.md and <table>.csv for each table with results, tables.md (all of
  them) and runs.csv (every finished run), and where runs have per-class results
  class_errors.csv and class_errors.md (class_errors_csv, class_errors_markdown). Returns the
  paths written.
  """
  os.makedirs(tables_dir, exist_ok=True)
  written, markdown = [], []
  for table in tables_with_results(results):
    text = markdown_table(table, results)
    markdown.append(text)
    for suffix, content in (('md', text), ('csv', csv_table(table, results))):
      path = os.path.join(tables_dir, f'{table.name}.{suffix}')
      with open(path, 'w') as f:
        f.write(content)
      written.append(path)
  if markdown:
    for name, content in (('tables.md', '\n'.join(markdown)),
                          ('runs.csv', results_lib.runs_csv(results))):
      path = os.path.join(tables_dir, name)
      with open(path, 'w') as f:
        f.write(content)
      written.append(path)
    for name, content in (('class_errors.csv', class_errors_csv(results)),
                          ('class_errors.md', class_errors_markdown(results))):
      if content is not None:
        path = os.path.join(tables_dir, name)
        with open(path, 'w') as f:
          f.write(content)
        written.append(path)
  return written
