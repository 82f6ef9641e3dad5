"""Writes the regenerated parts of the Table 2, Table 3 and conclusions pages.

  python docs/results/conclusions/update_pages.py ROOT

Run after `bin/sweep --tables_only` has written each table's folder (the pages' Commands).
ROOT is the Tables 2 and 3 sweep's root (or its --archive). Replaces what lies between the
markers `<!-- begin NAME -->` / `<!-- end NAME -->` (tf_ipmssl/sweep/results_page.py):
  table2_fashion_mnist_100.md: status, comparison, takeaways, labeled, wall_times;
  table3_fashion_mnist_100.md: status, comparison, takeaways, wall_times;
  conclusions.md: conclusion1, conclusion2, conclusion3.
The prose around them (the diagnoses, what the verdicts mean) is written by hand.
"""
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
import claims  # pylint: disable=g-import-not-at-top,wrong-import-order
from tf_ipmssl import cells as cells_lib  # pylint: disable=g-import-not-at-top
from tf_ipmssl.sweep import results_page  # pylint: disable=g-import-not-at-top
from tf_ipmssl.sweep import tables  # pylint: disable=g-import-not-at-top

RESULTS = HERE.parent
SEEDS = 3


def _splice(page, parts):
  text = page.read_text()
  for name, body in parts.items():
    text = results_page.splice(text, name, body, str(page))
  page.write_text(text)
  print(f'Wrote {page}')


def _items(lines):
  return '\n'.join(results_page.wrapped(line) for line in lines)


def status(results, table):
  """'N of M runs finished (...)': the table's runs and the baseline's."""
  cells = [r for r in results.values() if r.cell.table == table]
  done = sum(r.n for r in cells)
  complete = sum(r.n >= SEEDS for r in cells)
  base = results[claims.BASELINE]
  return (f'{done} of {len(cells) * SEEDS} runs finished ({complete} of {len(cells)} cells at '
          f'n = {SEEDS}); the supervised baseline: {base.n} of {SEEDS}.')


def _mean_std_text(values):
  mean, std = tables.mean_std(values)
  if mean is None:
    return '–'
  return f'{mean:.2f}' + ('' if std is None else f' ± {std:.2f}') + f' (n={len(values)})'


def labeled_table(results):
  """Per Table 2 cell: test error and labeled-set error at the best validation step and
  at the end (mean ± std over the seeds)."""
  groups = {c: 'gradient norm on f' for c in claims.GRADIENT_NORM_ON_F}
  groups.update({c: 'classifier-free' for c in claims.CLASSIFIER_FREE})
  groups.update({c: 'f− only' for c in claims.F_NEG_ONLY})
  lines = ['| cell | group | test error | labeled error, best step | labeled error, last step |',
           '|---|---|---:|---:|---:|']
  for cell in cells_lib.select_cells(tables=['table2'], datasets=['cifar10']):
    result = results[cell.id]
    best = [r.labeled_error for r in result.runs if r.labeled_error is not None]
    final = [r.final_labeled_error for r in result.runs if r.final_labeled_error is not None]
    lines.append(f'| {cell.id} | {groups[cell.id]} | {result.text} | {_mean_std_text(best)} | '
                 f'{_mean_std_text(final)} |')
  return '\n'.join(lines)


def _wall_times(results, table):
  chosen = {k: r for k, r in results.items() if r.cell.table in (table, 'appendix_c')}
  return '\n'.join(results_page.wall_time_table(chosen))


def main(root):
  results = claims.sweep_results(root)
  table1 = claims.table1_results()
  for table in ('table2', 'table3'):
    folder = RESULTS / f'{table}_fashion_mnist_100'
    comparison = folder / 'comparison.md'
    parts = {
        'status': status(results, table),
        'comparison': comparison.read_text() if comparison.exists() else '(no runs yet)',
        'takeaways': _items(claims.claim_lines(
            results, claims.TABLE2_CLAIMS if table == 'table2' else claims.TABLE3_CLAIMS)
                            + ([claims.mechanism(results)[1]] if table == 'table2' else [])),
        'wall_times': _wall_times(results, table),
    }
    if table == 'table2':
      parts['labeled'] = labeled_table(results)
    _splice(RESULTS / f'{table}_fashion_mnist_100.md', parts)
  verdict1 = claims.overall(claims.claim_verdicts(table1, claims.K_PLUS_1_CLAIMS))
  verdict2 = claims.overall(claims.claim_verdicts(results, claims.TABLE3_CLAIMS[:1]))
  verdict3 = claims.overall(claims.claim_verdicts(results, claims.TABLE2_CLAIMS[1:])
                            + [claims.mechanism(results)[0]])
  _splice(RESULTS / 'conclusions.md', {
      'conclusion1': f'**Verdict: {verdict1}.**\n\n' + _items(
          claims.claim_lines(table1, claims.K_PLUS_1_CLAIMS)),
      'conclusion2': f'**Verdict: {verdict2}.**\n\n' + _items(
          claims.claim_lines(results, claims.TABLE3_CLAIMS[:1])),
      'conclusion3': f'**Verdict: {verdict3}.**\n\n' + _items(
          claims.claim_lines(results, claims.TABLE2_CLAIMS[1:])
          + [claims.mechanism(results)[1]]),
  })


if __name__ == '__main__':
  if len(sys.argv) != 2:
    sys.exit(__doc__)
  main(sys.argv[1])
