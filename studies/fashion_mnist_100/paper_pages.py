"""The generated parts of the miniature Tables 1-3 pages and of the conclusions page.

The runs come from each table's runs.csv (docs/results/table<k>_fashion_mnist_100/runs.csv,
written by `bin/sweep --tables_only`) and, where given, a folder of run records laid out as
a sweep root (<dir>/<cell id>/seed_<s>/metrics.json); a record replaces the runs.csv row of
the same cell and seed. Each part replaces what lies between its page's markers
`<!-- begin NAME -->` / `<!-- end NAME -->` (results_page.splice); the prose around them
is written by hand:
  table1_fashion_mnist_100.md: comparison, takeaways, rule;
  table2_fashion_mnist_100.md: status, comparison, takeaways, labeled, wall_times, rule;
  table3_fashion_mnist_100.md: status, comparison, takeaways, wall_times, rule;
  conclusions.md: confirmation, exploratory, primary, broadcast, conclusion1, conclusion2,
  conclusion3, rule, late, longer, step900, ties;
  README.md (where `write` is given its path): verdicts.
The decisions are docs/results/confirmation.md's (confirmation.py): its cells and splits read
from that page, its runs from confirmation_records. The earlier runs are re-read with the
split as the unit (split_reading.py, exploratory); the earlier protocol's pair test stays as
the `primary` part (protocol.py): its pairs read from docs/results/protocol.md, the runs
with the released code's broadcast f from its records folder (docs/results/broadcast_f_records),
whose every cell the broadcast part sets beside the per-example runs (broadcast_f.py). The
confirmation's readings: the longer budget (longer_budget.py, its runs in confirmation_records/
longer_per_example and longer_broadcast, beside the 900-step runs of splits 20 and 21) and the
step-900 reading (step900_reading.py: confirmation_records/step900 beside the originals in
broadcast_f_records).
Table 3's page also shows the seeds run in two cells of one configuration
(one_configuration.py), and a Table 3 cell that is a Table 2 cell has that cell's runs of
the extra seeds.
"""
import os
import textwrap
from typing import Dict, List, Optional, Sequence, Set, Tuple

from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import broadcast_f
from studies.fashion_mnist_100 import claims
from studies.fashion_mnist_100 import confirmation
from studies.fashion_mnist_100 import longer_budget
from studies.fashion_mnist_100 import one_configuration
from studies.fashion_mnist_100 import paper_claims
from tf_ipmssl.sweep import paper_comparison
from studies.fashion_mnist_100 import protocol
from studies.fashion_mnist_100 import record_readings
from studies.fashion_mnist_100 import results_page
from studies.fashion_mnist_100 import split_reading
from studies.fashion_mnist_100 import step900_reading
from tf_ipmssl.sweep import results as results_lib

Results = Dict[str, results_lib.CellResult]
SEEDS = 3
FOLDER = '{table}_fashion_mnist_100'
README = 'README.md'  # The key of the README's part in `parts`; its path is given to write.


def _folder(results_dir: str, table: str) -> str:
  return os.path.join(results_dir, FOLDER.format(table=table))


def table_cells(table: str) -> List[cells_lib.Cell]:
  """The table's CIFAR-10 cells and the supervised baseline."""
  return list(cells_lib.select_cells(tables=[table], datasets=['cifar10'])) + [
      cells_lib.get_cell(paper_claims.BASELINE)]


def merge(*sources: Results) -> Results:
  """One result per cell from several sources; a later source's run replaces an earlier
  one's of the same seed."""
  runs: Dict[str, Dict[int, results_lib.RunResult]] = {}
  cells: Dict[str, cells_lib.Cell] = {}
  for source in sources:
    for cell_id, result in source.items():
      cells[cell_id] = result.cell
      runs.setdefault(cell_id, {}).update({run.seed: run for run in result.runs})
  return {cell_id: results_lib.CellResult(cells[cell_id], tuple(
      by_seed[s] for s in sorted(by_seed))) for cell_id, by_seed in runs.items()}


def with_every_cell(results: Results, cells: Sequence[cells_lib.Cell]) -> Results:
  """`results` restricted to `cells`, in their order; a cell without runs gets an empty
  result."""
  return {cell.id: results.get(cell.id, results_lib.CellResult(cell)) for cell in cells}


def load(results_dir: str, records: Optional[str] = None, moved: Optional[List] = None
         ) -> Tuple[Results, Results, Set]:
  """(Table 1's results, Tables 2 and 3's with their baseline, the (cell id, seed) of the
  Tables 2 and 3 runs known from a runs.csv row alone). With `records`, its runs replace
  the rows of the same cell and seed, each at the earliest of its tied best steps
  (`earliest_tied`; `moved` collects what that moves)."""
  def csv_results(table):
    path = os.path.join(_folder(results_dir, table), 'runs.csv')
    return results_lib.read_runs_csv(path) if os.path.exists(path) else {}
  table1 = with_every_cell(csv_results('table1'), table_cells('table1'))
  rows = merge(csv_results('table2'), csv_results('table3'))
  cells = table_cells('table2')[:-1] + table_cells('table3')
  if not records:
    return table1, with_every_cell(one_configuration.with_reused_seeds(rows), cells), set()
  from_records = record_readings.with_lowest_labeled_errors(
      earliest_tied(results_lib.collect(records, cells), os.path.basename(records), moved))
  kept = {(cell_id, run.seed) for cell_id, result in from_records.items()
          for run in result.runs if run.has_record}
  row_only = {(cell_id, run.seed) for cell_id, result in merge(rows, from_records).items()
              for run in result.runs if (cell_id, run.seed) not in kept}
  table23 = one_configuration.with_reused_seeds(merge(rows, from_records))
  return table1, with_every_cell(table23, cells), row_only


def earliest_tied(results: Results, folder: str, moved: Optional[List]) -> Results:
  """`results` at each run's earliest tied best step
  (record_readings.with_earliest_tied_best), what moved added to `moved` as (folder, cell id,
  seed, recorded step, step, recorded error, error)."""
  replaced, changes = record_readings.with_earliest_tied_best(results)
  if moved is not None:
    moved += [(folder,) + change for change in changes]
  return replaced


def ties(moved: Sequence[Tuple]) -> str:
  """conclusions.md's `ties` part: each run whose reported error the tie rule moves."""
  if not moved:
    return 'No record names a later step than the earliest of its tied best ones.'
  lines = [f'- {folder}/{cell_id} seed {seed}: step {step:,} rather than {recorded:,} (the same '
           f'validation error), test error {error:.2f}% rather than {was:.2f}% '
           f'({error - was:+.2f})'
           for folder, cell_id, seed, recorded, step, was, error in sorted(set(moved))]
  return '\n'.join(lines)


def load_broadcast(results_dir: str, moved: Optional[List] = None) -> Results:
  """The runs with the released code's broadcast f (Table 2's cells), from their records
  folder under results_dir, each at the earliest of its tied best steps; empty before the
  first has finished."""
  folder = os.path.join(results_dir, protocol.BROADCAST_RECORDS)
  if not os.path.isdir(folder):
    return {}
  found = earliest_tied(results_lib.collect(folder, table_cells('table2')[:-1]),
                        protocol.BROADCAST_RECORDS, moved)
  return {cell_id: result for cell_id, result in found.items() if result.runs}


def primary(judged) -> str:
  """conclusions.md's primary part: every test of the protocol, then per family its result
  under both endpoints with one line per pair."""
  lines = []
  for family in protocol.FAMILIES:
    lines += protocol.family_items(judged, family)
  return protocol.tests_table(judged) + '\n\n' + _items(lines)


def _items(lines: Sequence[str]) -> str:
  """Markdown items wrapped for the page; '  - ' lines are nested items."""
  return '\n'.join(
      '  ' + results_page.wrapped(line[2:], results_page.WIDTH - 2).replace('\n', '\n  ')
      if line.startswith('  - ') else results_page.wrapped(line) for line in lines)


def status(results: Results, table: str, row_only: Set) -> str:
  """'N of M runs finished (...)': the table's runs and the baseline's; with records, the
  runs that have no record beyond their runs.csv row."""
  cells = [r for r in results.values() if r.cell.table == table]
  done = sum(sum(s < SEEDS for s in r.seeds) for r in cells)
  complete = sum(r.n >= SEEDS for r in cells)
  base = results[paper_claims.BASELINE]
  text = (f'{done} of {len(cells) * SEEDS} runs finished ({complete} of {len(cells)} cells '
          f'at n ≥ {SEEDS}); the supervised baseline: {base.n} run{"s" * (base.n != 1)}'
          f' ({_seeds_text(base.seeds)}).')
  extra = {r.cell.id: [s for s in r.seeds if s >= SEEDS] for r in cells}
  extra = {c: seeds for c, seeds in extra.items() if seeds}
  if extra:
    reused = one_configuration.reused()
    text += ' Extra seeds: ' + '; '.join(
        f'{c} seeds {", ".join(map(str, seeds))}'
        + (f' (the runs of {reused[c]}, one configuration)' if c in reused else '')
        for c, seeds in sorted(extra.items())) + '.'

  missing: Dict[str, List[int]] = {}
  for cell_id, seed in sorted(row_only):
    if results[cell_id].cell.table in (table, 'appendix_c'):
      missing.setdefault(cell_id, []).append(seed)
  if missing:
    text += (' Runs with no record beyond their runs.csv row: ' + '; '.join(
        f'{c} {_seeds_text(seeds)}' for c, seeds in missing.items()) + '.')
  mixed = mixed_cpus(cells + [base])
  if mixed:
    text += ' Cells whose seeds ran on different CPUs: ' + '; '.join(mixed) + '.'
  return text


def _seeds_text(seeds: Sequence[int]) -> str:
  """'seed 2' or 'seeds 0, 1'."""
  return f'seed{"s" * (len(seeds) > 1)} {", ".join(map(str, seeds))}'


def mixed_cpus(results: Sequence[results_lib.CellResult]) -> List[str]:
  """The cells whose runs trained on more than one CPU, grouped by which seeds ran where:
  'seeds 0, 1 on A and seed 2 on B: cell, cell', the CPUs in order of their first seed."""
  groups: Dict[str, List[str]] = {}
  for result in results:
    seeds_on: Dict[str, List[int]] = {}
    for run in result.runs:
      seeds_on.setdefault(run.cpu or 'a CPU not recorded', []).append(run.seed)
    if len(seeds_on) > 1:
      pattern = ' and '.join(f'{_seeds_text(seeds)} on {cpu}'
                             for cpu, seeds in seeds_on.items())
      groups.setdefault(pattern, []).append(result.cell.id)
  return [f'{pattern}: {", ".join(cells)}' for pattern, cells in groups.items()]


def comparison(results: Results, folder: str) -> str:
  """The page's per-cell comparison with the paper: the table folder's comparison.md as
  `bin/sweep --tables_only` wrote it from the runs' full-precision errors, else the same
  computed from `results`."""
  path = os.path.join(folder, 'comparison.md')
  if os.path.exists(path):
    with open(path) as f:
      return f.read()
  baseline = results[paper_claims.BASELINE]
  compared = [r for cell_id, r in results.items() if cell_id != paper_claims.BASELINE]
  return paper_comparison.markdown(paper_comparison.compare(compared, baseline))


def reused_note(table23: Results, table: str) -> str:
  """Under the comparison: the table's cells that also count another cell's runs of the
  extra seeds (one configuration), which the comparison's row leaves out, with their mean
  over every seed ('' where none)."""
  notes = []
  for cell_id, source in sorted(one_configuration.reused().items()):
    result = table23.get(cell_id)
    if result is None or result.cell.table != table:
      continue
    borrowed = [run.seed for run in result.runs if one_configuration.reused_from(
        table23, cell_id, run)]
    if borrowed:
      notes.append(f'{cell_id}\'s row counts its own runs; the take-aways, the conclusions and '
                   f'the protocol also count {_seeds_text(borrowed)}, {source}\'s runs (one '
                   f'configuration): {result.text} over every seed.')
  return '\n\n'.join(notes)


def _mean_std_text(values):
  mean, std = results_lib.mean_std(values)
  if mean is None:
    return '–'
  return f'{mean:.2f}' + ('' if std is None else f' ± {std:.2f}') + f' (n={len(values)})'


def labeled_table(results: Results) -> str:
  """Per Table 2 cell: its group, test error, and labeled-set error at the end of training
  and at the best validation step (mean ± std over the seeds), and per seed the end's, the
  best step's and the lowest over the run ('–' where the run's eval curve is not kept)."""
  lines = ['| cell | group | test error | labeled error, end of training | '
           'labeled error, best step | per seed, end (best step; lowest over the run) |',
           '|---|---|---:|---:|---:|---|']
  for cell in cells_lib.select_cells(tables=['table2'], datasets=['cifar10']):
    result = results[cell.id]
    last = claims.labeled_errors(result).errors
    best = claims.labeled_errors(result, 'best').errors
    per_seed = ' / '.join(
        f'{run.last_labeled_error:g} ({_number(run.labeled_error)}; '
        f'{_number(run.lowest_labeled_error)})'
        for run in result.runs if run.last_labeled_error is not None) or '–'
    lines.append(f'| {cell.id} | {paper_claims.GROUPS[cell.id]} | {result.text} | '
                 f'{_mean_std_text(last)} | {_mean_std_text(best)} | {per_seed} |')
  return '\n'.join(lines)


def _number(value: Optional[float]) -> str:
  return '–' if value is None else f'{value:g}'


def wall_times(results: Results, table: str) -> str:
  """Per finished run of the table and the baseline: its best validation step (marked
  protocol.RAMPUP_MARK inside the IPM ramp-up), wall time (metrics.json's `wall_seconds`,
  summed over its bin/train sessions) and CPU. A run a Table 3 cell has through the reused
  extra seeds says whose run it is (it trained once, as that cell's)."""
  lines = ['| cell | seed | best step | wall time (s) | CPU |', '|---|---:|---:|---:|---|']
  for result in results.values():
    if result.cell.table not in (table, 'appendix_c'):
      continue
    for run in result.runs:
      wall = '–' if run.wall_seconds is None else f'{run.wall_seconds:,.0f}'
      source = one_configuration.reused_from(results, result.cell.id, run)
      cell = result.cell.id + (f' ({source}\'s run)' if source else '')
      lines.append(f'| {cell} | {run.seed} | {protocol.best_step_text(run)} | {wall} | '
                   f'{run.cpu or "not recorded"} |')
  return '\n'.join(lines)


# Points by which a run's last evaluation must exceed its reported (best-step) test error
# to be listed as a late collapse.
LATE_MARGIN = 5.0


def late_collapses(results: Results) -> str:
  """Markdown items: each run whose test error at its last evaluation is LATE_MARGIN points
  or more above the one reported at its best validation step, with both; and the runs whose
  last evaluation is unknown (a blank final_test_error in runs.csv: results.runs_csv)."""
  lines, unknown = [], {}
  for result in results.values():
    for run in result.runs:
      if run.last_test_error is None:
        unknown[result.cell.table] = unknown.get(result.cell.table, 0) + 1
      elif run.last_test_error - run.test_error >= LATE_MARGIN:
        lines.append(f'- {result.cell.id} seed {run.seed}: {run.test_error:.2f}% at the best '
                     f'validation step, {run.last_test_error:.2f}% at the last step '
                     f'({run.last_test_error - run.test_error:+.1f})')
  if not lines:
    lines.append(f'- No run ends {LATE_MARGIN:g} points or more above its best-step error.')
  if unknown:
    lines.append('- Runs whose last-step test error is not kept (their runs.csv row holds the '
                 'best step\'s only): ' + ', '.join(
                     f'{table} {n}' for table, n in sorted(unknown.items())) + '.')
  return '\n'.join(lines)


STEP900_RECORDS = 'step900'  # Under the confirmation's records.


def load_step900(results_dir: str) -> step900_reading.Reading:
  """The step-900 reading's runs (under the confirmation's records) and the originals."""
  return step900_reading.load(
      os.path.join(results_dir, confirmation.RECORDS, STEP900_RECORDS),
      os.path.join(results_dir, protocol.BROADCAST_RECORDS))


def step900(results_dir: str, reading: step900_reading.Reading, results: Results,
            broadcast: Results) -> str:
  """The step-900 reading's part: its runs and the originals, what they point to, and the
  rises of every other record (`results`' and `broadcast`'s runs but the originals, and the
  confirmation's)."""
  dirs = [run.model_dir
          for found, leave_out in ((results, ''), (broadcast, step900_reading.CELL))
          for result in found.values() if result.cell.id != leave_out
          for run in result.runs if run.has_record and run.model_dir]
  dirs += step900_reading.record_dirs(os.path.join(results_dir, confirmation.RECORDS),
                                      leave_out=(STEP900_RECORDS,))
  # A run that stands in two cells (a Table 3 cell that is a Table 2 cell) counts once.
  unique = sorted({os.path.realpath(d) for d in dirs})
  return step900_reading.part(reading, unique)


def rule() -> str:
  """The verdict rule, what it can show, and what a difference across CPUs carries."""
  return '\n\n'.join(textwrap.fill(text, results_page.WIDTH, break_long_words=False,
                                   break_on_hyphens=False)
                     for text in (claims.RULE, claims.WHAT_IT_CAN_SHOW, claims.CPU_NOTE))


def table1_takeaways(table1: Results) -> List[str]:
  best = paper_claims.best_ssl_claim(table1)
  return paper_claims.claim_items(table1, paper_claims.TABLE1_CLAIMS
                                  + ((best,) if best else ()))


def parts(results_dir: str, table1: Results, table23: Results, row_only: Set = frozenset(),
          moved: Sequence[Tuple] = ()) -> Dict[str, Dict[str, str]]:
  """{page file name: {part name: its text}}; the tables' folders are under results_dir;
  `moved`: what the tie rule moved in table23's records (load's)."""
  moved = list(moved)
  rule_text = rule()
  mechanism = paper_claims.mechanism(table23)
  found = {'table1_fashion_mnist_100.md': {
      'comparison': comparison(table1, _folder(results_dir, 'table1')),
      'takeaways': _items(table1_takeaways(table1)),
      'rule': rule_text}}
  for table, claim_list in (('table2', paper_claims.TABLE2_CLAIMS),
                            ('table3', paper_claims.TABLE3_CLAIMS)):
    results = with_every_cell(table23, table_cells(table))
    lines = paper_claims.claim_items(table23, claim_list)
    note = reused_note(table23, table)
    page = {'status': status(table23, table, row_only),
            'comparison': comparison(results, _folder(results_dir, table))
                          + (f'\n\n{note}' if note else ''),
            'wall_times': wall_times(table23, table), 'rule': rule_text}
    if table == 'table2':
      lines.append(mechanism.text)
      page['labeled'] = labeled_table(table23)
    else:
      page['trained_twice'] = one_configuration.trained_twice({**table1, **table23})
    page['takeaways'] = _items(lines)
    found[f'{table}_fashion_mnist_100.md'] = page
  verdicts = paper_claims.conclusion_verdicts(table1, table23)
  bodies = (paper_claims.claim_items(table1, paper_claims.K_PLUS_1_CLAIMS),
            paper_claims.claim_items(table23, paper_claims.CONCLUSION2_CLAIMS),
            paper_claims.claim_items(table23, paper_claims.CONCLUSION3_CLAIMS)
            + [mechanism.text])
  found['conclusions.md'] = {
      f'conclusion{k}': f'**The sign rule (secondary): {verdict}.**\n\n' + _items(body)
      for k, (verdict, body) in enumerate(zip(verdicts, bodies), start=1)}
  found['conclusions.md']['rule'] = rule_text
  found['conclusions.md']['late'] = late_collapses({**table1, **table23})
  pairs = protocol.read_pairs(os.path.join(results_dir, protocol.PAGE))
  broadcast = load_broadcast(results_dir, moved)
  judged = protocol.judge(pairs, {**table1, **table23}, broadcast)
  found['conclusions.md']['primary'] = primary(judged)
  found['conclusions.md']['broadcast'] = broadcast_f.table(table23, broadcast)
  step900_runs = load_step900(results_dir)
  found['conclusions.md']['step900'] = step900(results_dir, step900_runs,
                                               {**table1, **table23}, broadcast)
  plan = confirmation.read_plan(os.path.join(results_dir, confirmation.PAGE))
  confirmation_records = os.path.join(results_dir, confirmation.RECORDS)
  observed = confirmation.load(confirmation_records, plan, moved)
  confirmed = confirmation.judge(plan, observed)
  exploratory = split_reading.read(split_reading.observations({**table1, **table23},
                                                              broadcast))
  found['conclusions.md']['confirmation'] = confirmation.part(confirmed)
  longer = longer_budget.load(confirmation_records, moved)
  found['conclusions.md']['ties'] = ties(moved)
  found['conclusions.md']['longer'] = longer_budget.part(observed, longer)
  found['conclusions.md']['exploratory'] = split_reading.part(exploratory)
  lines = [confirmation.readme_line(title, confirmed, str(k),
                                    split_reading.verdict_text(exploratory, str(k)))
           for k, title in enumerate(paper_claims.CONCLUSIONS, start=1)]
  lines.append('- Readings (exploratory, read after their runs): the longer budget: '
               f'{longer_budget.verdict_text(observed, longer)}; the step-900 jump of '
               f'broadcast Ω_S(f): {step900_reading.verdict_text(step900_runs)}')
  found[README] = {'verdicts': '\n'.join(lines)}
  return found


def write(results_dir: str, records: Optional[str] = None, readme: Optional[str] = None
          ) -> List[str]:
  """Regenerates every page's parts under `results_dir`, and the README's verdicts where
  `readme` (its path) is given; returns the pages written."""
  moved = []
  table1, table23, row_only = load(results_dir, records, moved)
  written = []
  for name, page_parts in parts(results_dir, table1, table23, row_only, moved).items():
    if name == README and readme is None:
      continue
    path = readme if name == README else os.path.join(results_dir, name)
    results_page.rewrite(path, page_parts)
    written.append(path)
  return written
