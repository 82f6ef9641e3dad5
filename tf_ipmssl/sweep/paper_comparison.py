"""Our cells beside the paper's: ranks, Spearman's ρ and the paired gain over a baseline.

For a set of cells of one paper table column (e.g. Table 1's 13 CIFAR-10 cells run under a
CPU preset) and a baseline cell run on the same seeds (the supervised critic under the same
preset), each row holds

- our mean ± sample std over the seeds, and the paper's mean;
- the paper's rank and ours among the compared cells (1 = lowest error; ties share the
  average rank). Ours ranks each cell's mean over the seeds every ranked cell has (the
  seed fixes the label split, so the cells are ranked on the same labeled images); where
  some cells have more seeds than others (extra seeds of a few cells), the ranks use only
  the common ones and the table says which;
- the paired difference to the baseline: per seed (the seed fixes the label split, so a
  seed's runs share their labeled images) our error minus the baseline's, mean ± std over
  the seeds both have.

Spearman's ρ is the Pearson correlation of the two rank columns (cells with a result only).
`bin/sweep --baseline_cell=...` writes this beside the paper's tables (comparison.md/.csv).
"""
import csv
import dataclasses
import io
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl.sweep import results as results_lib


def average_ranks(values: Sequence[float]) -> List[float]:
  """Ranks 1..n in ascending order; tied values share the mean of their ranks
  (scipy.stats.rankdata's 'average')."""
  from scipy import stats  # pylint: disable=g-import-not-at-top
  return [float(r) for r in stats.rankdata(values, method='average')] if len(values) else []


def spearman(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
  """Spearman's rank correlation (scipy.stats.spearmanr: Pearson's r of the average ranks);
  None if undefined (fewer than two values, or one side constant)."""
  if len(xs) != len(ys) or len(xs) < 2:
    return None
  from scipy import stats  # pylint: disable=g-import-not-at-top
  if len(set(xs)) < 2 or len(set(ys)) < 2:
    return None
  return float(stats.spearmanr(xs, ys).statistic)


@dataclasses.dataclass(frozen=True)
class Row:
  """One compared cell."""
  result: results_lib.CellResult
  paper_rank: Optional[float]
  our_rank: Optional[float]
  paired: Tuple[float, ...]  # Our error − the baseline's, per shared seed.
  # Per shared seed: whether the two runs trained on different CPUs.
  paired_across_cpus: Tuple[bool, ...] = ()

  @property
  def paired_mean_std(self):
    return results_lib.mean_std(self.paired)


@dataclasses.dataclass(frozen=True)
class Comparison:
  rows: Tuple[Row, ...]
  baseline: results_lib.CellResult
  rho: Optional[float]
  # The seeds our ranks are on where the ranked cells' seeds differ (None where they are
  # all of every ranked cell's seeds).
  ranked_on: Optional[Tuple[int, ...]] = None


def ranking_seeds(results: Sequence[results_lib.CellResult]) -> Optional[Tuple[int, ...]]:
  """The seeds every cell of `results` has, where the cells' seeds differ and they share
  some; None where every cell has the same seeds, or where no seed is shared (the cells are
  then ranked on their own means)."""
  seed_sets = {frozenset(r.seeds) for r in results}
  if len(seed_sets) < 2:
    return None
  common = frozenset.intersection(*seed_sets)
  return tuple(sorted(common)) or None


def mean_over(result: results_lib.CellResult, seeds: Optional[Sequence[int]]) -> float:
  """The cell's mean test error over `seeds` (all its seeds where None)."""
  if seeds is None:
    return result.mean
  return results_lib.mean_std([run.test_error for run in result.runs if run.seed in seeds])[0]


def compare(results: Sequence[results_lib.CellResult],
            baseline: results_lib.CellResult) -> Comparison:
  """Ranks (among the cells with a result and a paper number, ours on the seeds they all
  have), ρ and paired differences."""
  ranked = [r for r in results if r.n and r.cell.paper_error is not None]
  seeds = ranking_seeds(ranked)
  ours = [mean_over(r, seeds) for r in ranked]
  paper_ranks = dict(zip((r.cell.id for r in ranked),
                         average_ranks([r.cell.paper_error for r in ranked])))
  our_ranks = dict(zip((r.cell.id for r in ranked), average_ranks(ours)))
  rows = tuple(Row(r, paper_ranks.get(r.cell.id), our_ranks.get(r.cell.id),
                   *results_lib.paired_differences(r, baseline)[1:]) for r in results)
  rho = spearman([r.cell.paper_error for r in ranked], ours)
  return Comparison(rows, baseline, rho, seeds)


def _number(value, digits=2):
  return '–' if value is None else f'{value:.{digits}f}'


def _rank(value):
  return '–' if value is None else f'{value:g}'


def markdown(comparison: Comparison) -> str:
  base = comparison.baseline
  lines = ['| cell | ours (mean ± std, n) | paper | paper rank | our rank | '
           f'ours − {base.cell.id}, paired (per seed) |',
           '|---|---:|---:|---:|---:|---|']
  for row in comparison.rows:
    mean, std = row.paired_mean_std
    per_seed = ', '.join(f'{d:+.2f}' + (results_lib.CPU_MARK if across else '')
                         for d, across in zip(row.paired, row.paired_across_cpus))
    paired = '–' if mean is None else (
        f'{mean:+.2f}' + ('' if std is None else f' ± {std:.2f}') + f' ({per_seed})')
    lines.append(f'| {row.result.cell.id} | {row.result.text} | '
                 f'{_number(row.result.cell.paper_error)} | {_rank(row.paper_rank)} | '
                 f'{_rank(row.our_rank)} | {paired} |')
  lines.append(f'| {base.cell.id} (baseline) | {base.text} | '
               f'{_number(base.cell.paper_error)} | | | |')
  rho = comparison.rho
  lines += ['', f"Spearman's ρ between the paper's column and ours: {_number(rho)} "
            f"(over {sum(r.our_rank is not None for r in comparison.rows)} cells)."]
  if comparison.ranked_on is not None:
    seeds = (f'seed{"s" * (len(comparison.ranked_on) > 1)} '
             f'{", ".join(map(str, comparison.ranked_on))}')
    more = [r.result.cell.id for r in comparison.rows
            if r.our_rank is not None and set(r.result.seeds) - set(comparison.ranked_on)]
    lines += ['', f'Our ranks and ρ compare the cells\' means over {seeds}, which every '
              f'ranked cell has; the mean ± std of {", ".join(more)} is over all '
              f'{"their" if len(more) > 1 else "its"} seeds.']
  if any(any(row.paired_across_cpus) for row in comparison.rows):
    lines += ['', f'{results_lib.CPU_MARK} the run and the baseline\'s of that seed trained on '
              'different CPUs (one run moves by about a point between CPU families).']
  return '\n'.join(lines) + '\n'


def csv_text(comparison: Comparison) -> str:
  out = io.StringIO()
  writer = csv.writer(out, lineterminator='\n')
  writer.writerow(['cell', 'mean', 'std', 'n', 'paper', 'paper_rank', 'our_rank',
                   'paired_mean', 'paired_std', 'paired_n'])
  for row in comparison.rows + (Row(comparison.baseline, None, None, ()),):
    mean, std = row.paired_mean_std
    writer.writerow([row.result.cell.id, _blank(row.result.mean, 4), _blank(row.result.std, 4),
                     row.result.n, _blank(row.result.cell.paper_error),
                     _blank(row.paper_rank, 1), _blank(row.our_rank, 1), _blank(mean, 4),
                     _blank(std, 4), len(row.paired)])
  writer.writerow(['spearman_rho', _blank(comparison.rho, 4)] + [''] * 8)
  if comparison.ranked_on is not None:
    writer.writerow(['ranked_on_seeds', ' '.join(map(str, comparison.ranked_on))] + [''] * 8)
  return out.getvalue()


def _blank(value, digits=2):
  return '' if value is None else f'{value:.{digits}f}'


def write(results: Dict[str, results_lib.CellResult], baseline_id: str, tables_dir: str,
          plot: bool = True) -> List[str]:
  """comparison.md, comparison.csv and (with `plot`) comparison.png for every cell of
  `results` except the baseline."""
  baseline = results[baseline_id]
  compared = [r for cell_id, r in results.items() if cell_id != baseline_id]
  comparison = compare(compared, baseline)
  written = []
  for name, content in (('comparison.md', markdown(comparison)),
                        ('comparison.csv', csv_text(comparison))):
    path = os.path.join(tables_dir, name)
    with open(path, 'w') as f:
      f.write(content)
    written.append(path)
  if plot:
    from tf_ipmssl.sweep import plots  # pylint: disable=g-import-not-at-top
    written.append(plots.plot_comparison(comparison, os.path.join(tables_dir,
                                                                  'comparison.png')))
  return written


