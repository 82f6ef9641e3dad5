"""The released code's broadcast f beside the per-example f, cell by cell (conclusions.md).

Every Table 2 cell run with the broadcast f (docs/algorithm.md#pairwise-f; its records in
docs/results/broadcast_f_records) against the same cell's per-example runs on the same seeds:
the test error at the best validation step, its per-seed differences, the late validation
error (protocol.late_validation_error) and the labeled-set error at the last evaluation.
"""
import statistics
from typing import Callable, Dict, List, Optional, Sequence

from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import claims
from studies.fashion_mnist_100 import protocol
from tf_ipmssl.sweep import results as results_lib

Results = Dict[str, results_lib.CellResult]
HEADER = ('| constraints | paper | seeds | per-example f | broadcast f | '
          'broadcast − per-example, per seed | late, per-example | late, broadcast | '
          'labeled-set error at the end, per-example | the same, broadcast |\n'
          '|---|---:|---|---:|---:|---|---:|---:|---|---|')


def _mean_text(values: Sequence[float]) -> str:
  mean, std = results_lib.mean_std(values)
  if mean is None:
    return '–'
  return cells_lib.format_error(mean, std)


def _late_text(values: Sequence[Optional[float]], n: int) -> str:
  kept = [v for v in values if v is not None]
  if not kept:
    return '–'
  return f'{statistics.fmean(kept):.2f}' + (f' (n={len(kept)})' if len(kept) < n else '')


def _labeled_text(runs: Sequence[results_lib.RunResult]) -> str:
  return ' / '.join('–' if run.last_labeled_error is None else f'{run.last_labeled_error:g}'
                    for run in runs)


def table(per_example: Results, broadcast: Results,
          late: Callable[[results_lib.RunResult], Optional[float]] = (
              protocol.late_validation_error)) -> str:
  """One row per cell with broadcast-f runs, in Table 2's order: the paper's CIFAR-10 error,
  the seeds both fs have, each f's mean ± std over them, the per-seed differences
  (claims.check_pair: marked claims.CPU_MARK where the two runs trained on different
  CPUs), each f's late validation error averaged over the seeds whose run keeps its curve
  (n where fewer), and each f's labeled-set error (%) at the last evaluation per seed ('–'
  where the run's metrics.json lacks it). '' where no cell has broadcast runs."""
  lines = []
  for cell in cells_lib.select_cells(tables=['table2'], datasets=['cifar10']):
    if cell.id not in broadcast or cell.id not in per_example:
      continue
    pair = claims.check_pair(broadcast[cell.id], per_example[cell.id])
    if not pair.seeds:
      continue
    mine = _runs_of(broadcast[cell.id], pair.seeds)
    other = _runs_of(per_example[cell.id], pair.seeds)
    lines.append(
        f'| {cell.row_label} | {cell.paper_text} | {protocol.seed_range(pair.seeds)} | '
        f'{_mean_text([r.test_error for r in other])} | '
        f'{_mean_text([r.test_error for r in mine])} | {pair.per_seed} | '
        f'{_late_text([late(r) for r in other], pair.n)} | '
        f'{_late_text([late(r) for r in mine], pair.n)} | '
        f'{_labeled_text(other)} | {_labeled_text(mine)} |')
  return HEADER + '\n' + '\n'.join(lines) if lines else ''


def _runs_of(result: results_lib.CellResult, seeds: Sequence[int]
             ) -> List[results_lib.RunResult]:
  by_seed = {run.seed: run for run in result.runs}
  return [by_seed[s] for s in seeds]
