"""Cells of the miniature Tables 1-3 that are one configuration under the CPU preset.

Some cells of different tables are the same run: the K+1 Fisher(f) cell is Table 1's
`fisher_kplus1`, Table 2's `fisher_f` (Ω_F on f, no Sobolev term) and Table 3's
no-normalization Fisher. Under the preset their gin files give equal run configurations
(tests/sweep/test_one_configuration.py checks it on the gin files), so one seed of the two
is one computation: on the same CPU it gives the same numbers, bit for bit, and a difference
measures the CPU (`trained_twice`).

The sweep trains each cell's seeds 0-2 itself; the extra seeds (3 and 4) of a Table 3 cell
that is a Table 2 cell are that Table 2 cell's runs (`with_reused_seeds`).
"""
from typing import Dict, List, Optional, Tuple

from tf_ipmssl.sweep import results as results_lib

Results = Dict[str, results_lib.CellResult]

# Each group: cells, one per table, whose configurations are equal under the preset.
GROUPS: Tuple[Tuple[str, ...], ...] = (
    ('table1/cifar10_fisher_kplus1', 'table2/cifar10_fisher_f', 'table3/cifar10_none_fisher'),
    ('table1/cifar10_fisher_sobolev_kplus1', 'table2/cifar10_fisher_f_sobolev_fneg',
     'table3/cifar10_none_fisher_sobolev'),
    ('table1/cifar10_wgan_gp_kplus1', 'table2/cifar10_gp_f'),
    ('table1/cifar10_sobolev_kplus1', 'table2/cifar10_sobolev_f'),
)
# Seeds below this one each cell trains itself; from it on a Table 3 cell reuses the runs of
# the Table 2 cell of its group.
FIRST_REUSED_SEED = 3


def _table(cell_id: str) -> str:
  return cell_id.split('/', 1)[0]


def reused() -> Dict[str, str]:
  """{Table 3 cell: the Table 2 cell whose extra seeds it reuses}."""
  out = {}
  for group in GROUPS:
    by_table = {_table(c): c for c in group}
    if 'table2' in by_table and 'table3' in by_table:
      out[by_table['table3']] = by_table['table2']
  return out


def with_reused_seeds(results: Results) -> Results:
  """`results` where each Table 3 cell of `reused()` also has its Table 2 cell's runs of the
  seeds from FIRST_REUSED_SEED on that it has not run itself."""
  out = dict(results)
  for target, source in reused().items():
    if target not in results or source not in results:
      continue
    own = set(results[target].seeds)
    extra = [run for run in results[source].runs
             if run.seed >= FIRST_REUSED_SEED and run.seed not in own]
    if extra:
      runs = sorted(results[target].runs + tuple(extra), key=lambda run: run.seed)
      out[target] = results_lib.CellResult(results[target].cell, tuple(runs),
                                           results[target].unfinished)
  return out


def reused_from(results: Results, cell_id: str, run: results_lib.RunResult) -> Optional[str]:
  """The Table 2 cell whose run `run` of `cell_id` is (through `with_reused_seeds`), None
  where the cell trained it itself."""
  source = reused().get(cell_id)
  if source is None or source not in results:
    return None
  return source if any(run is other for other in results[source].runs) else None


def _run_text(run: results_lib.RunResult) -> str:
  return f'{run.test_error:.2f} ({run.cpu or "CPU not recorded"})'


def _gap(runs: List[Tuple[str, results_lib.RunResult]]) -> str:
  errors = [run.test_error for _, run in runs]
  return f'{max(errors) - min(errors):.2f} points apart'


def _one_error(runs: List[Tuple[str, results_lib.RunResult]]) -> bool:
  return len({run.test_error for _, run in runs}) == 1


def _equality(runs: List[Tuple[str, results_lib.RunResult]]) -> str:
  """Whether one seed's runs of one configuration gave one error: across all of them, and
  apart from that between the runs that trained on one known CPU (which must agree)."""
  if _one_error(runs):
    return 'yes'
  cpus = {run.cpu for _, run in runs}
  if len(cpus) == 1 and None not in cpus:
    return f'**no**: {_gap(runs)} on one CPU'
  parts = [f'no: {_gap(runs)}, ' + ('a CPU not recorded' if None in cpus
                                     else 'on different CPUs')]
  by_cpu: Dict[str, List[Tuple[str, results_lib.RunResult]]] = {}
  for cell_id, run in runs:
    if run.cpu is not None:
      by_cpu.setdefault(run.cpu, []).append((cell_id, run))
  for same in by_cpu.values():
    if len(same) < 2:
      continue
    names = ' and '.join(c for c, _ in same)
    if _one_error(same):
      parts.append(f'yes between {names}, on one CPU')
    else:
      parts.append(f'**no** between {names}: {_gap(same)} on one CPU')
  return '; '.join(parts)


def trained_twice(results: Results) -> str:
  """A markdown table: per group and seed that more than one of its cells has run, each
  cell's test error and CPU, and whether the errors are equal (they must be between the runs
  on one CPU). A run a cell has through `with_reused_seeds` is its Table 2 cell's run, not a
  second training: it is listed once."""
  lines = ['| cells (one configuration) | seed | test error % (CPU) of each | equal |',
           '|---|---:|---|---|']
  for group in GROUPS:
    cells = [c for c in group if c in results]
    by_seed: Dict[int, List[Tuple[str, results_lib.RunResult]]] = {}
    for cell_id in cells:
      for run in results[cell_id].runs:
        seen = by_seed.setdefault(run.seed, [])
        if not any(run is other for _, other in seen):
          seen.append((cell_id, run))
    for seed in sorted(by_seed):
      runs = by_seed[seed]
      if len(runs) < 2:
        continue
      lines.append(f'| {", ".join(c for c, _ in runs)} | {seed} | '
                   f'{"; ".join(_run_text(run) for _, run in runs)} | {_equality(runs)} |')
  if len(lines) == 2:
    return 'No seed has run in two cells of one configuration yet.'
  return '\n'.join(lines)
