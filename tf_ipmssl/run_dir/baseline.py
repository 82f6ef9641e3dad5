"""What a run is compared with on its final line (`train.baseline`).

`train.baseline = (runs_csv, baseline_cell)` or `(runs_csv, baseline_cell, recipe_cell)`:
cells of a results table written by `bin/sweep` (its `runs.csv`: one line per finished run,
with the dataset and label count each run trained on; tf_ipmssl/sweep/results.py). Typically
the baseline cell is the supervised run and the recipe cell the configuration this run
trains. The final line then shows

- the baseline's run **on the same labels**: the sweep's seed s binds the label split seed s,
  so the baseline run of seed s = this run's `build_ssl_data.split_seed` saw exactly this
  run's labeled images; with the difference in points;
- the means over the table's seeds of the baseline cell and the recipe cell.

A baseline whose runs trained on another dataset or another number of labels than this run
is not shown (the line says why), nor is one whose runs.csv does not give them.
TensorFlow-free.
"""
import csv
import dataclasses
import os
import pathlib
import statistics
from typing import Dict, Optional, Sequence

from tf_ipmssl import errors

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class RunData:
  """What decides which results a run can be compared with."""
  dataset: str
  labels: Optional[int]  # None: every training example labeled.
  split_seed: int


@dataclasses.dataclass(frozen=True)
class CellRuns:
  """The finished runs of one cell in a runs.csv."""
  cell: str
  errors: Dict[int, float]  # {seed: test error %}
  datasets: frozenset
  labels: frozenset  # Label counts as written ('' when the csv does not give them).

  @property
  def mean(self) -> float:
    return statistics.fmean(self.errors.values())

  @property
  def std(self) -> Optional[float]:
    return statistics.stdev(self.errors.values()) if len(self.errors) > 1 else None

  def mean_text(self) -> str:
    spread = '' if self.std is None else f' ± {self.std:.2f}'
    return f'{self.mean:.2f}{spread}% (n={len(self.errors)})'

  def mismatch(self, run: RunData) -> Optional[str]:
    """Why this cell's runs are not comparable with `run`, or None."""
    labels = str(run.labels) if run.labels is not None else 'all'
    if self.datasets != {run.dataset} or self.labels != {labels}:
      theirs = '/'.join(sorted(self.labels)) or 'unrecorded'
      return (f'its runs trained on {theirs} labels of {"/".join(sorted(self.datasets))}, '
              f'this run on {labels} of {run.dataset}')
    return None


def read_cell(runs_csv: str, cell: str) -> Optional[CellRuns]:
  """The cell's runs in runs_csv (relative to the repository root unless absolute); None
  when the file has no finished run of that cell."""
  path = _path(runs_csv)
  if not os.path.isfile(path):
    return None
  with open(path, newline='') as f:
    rows = [r for r in csv.DictReader(f) if r.get('cell') == cell]
  try:
    errors_by_seed = {int(r['seed']): float(r['test_error']) for r in rows}
  except (KeyError, ValueError):
    raise errors.UserError(f'{path} is not a runs.csv written by bin/sweep') from None
  if not errors_by_seed:
    return None
  return CellRuns(cell, errors_by_seed, frozenset(r.get('dataset') or '' for r in rows),
                  frozenset(r.get('labels') or '' for r in rows))


def _path(runs_csv):
  return runs_csv if os.path.isabs(runs_csv) else str(REPO_ROOT / runs_csv)


def check_spec(spec) -> None:
  """A ConfigError unless `spec` is None or (runs_csv, baseline cell[, recipe cell])."""
  if spec is None:
    return
  if (not isinstance(spec, (tuple, list)) or len(spec) not in (2, 3)
      or not all(isinstance(s, str) for s in spec)):
    raise errors.ConfigError(
        "train.baseline must be None or ('runs.csv', 'baseline cell id'[, 'recipe cell id']),"
        f' got {spec!r}')


def comparison_text(spec: Sequence[str], run: RunData, test_error: Optional[float]) -> str:
  """The final line's comparison: '; supervised ... on the same labels ...; means ...'."""
  runs_csv, baseline_cell = spec[0], spec[1]
  baseline = read_cell(runs_csv, baseline_cell)
  if baseline is None:
    return f'; baseline {baseline_cell}: no results in {runs_csv} yet'
  why = baseline.mismatch(run)
  if why:
    return f'; baseline {baseline_cell} not shown: {why}'
  parts = []
  same = baseline.errors.get(run.split_seed)
  if same is not None:
    gain = '' if test_error is None else f', {test_error - same:+.2f} points'
    parts.append(f'{baseline_cell} on the same labels (split seed {run.split_seed}): '
                 f'{same:.2f}%{gain}')
  else:
    parts.append(f'{baseline_cell}: no run with split seed {run.split_seed} in {runs_csv}')
  means = [f'{baseline_cell} {baseline.mean_text()}']
  if len(spec) > 2:
    recipe = read_cell(runs_csv, spec[2])
    if recipe is not None and recipe.mismatch(run) is None:
      means.insert(0, f'{spec[2]} {recipe.mean_text()}')
  parts.append('means over seeds: ' + ', '.join(means))
  return '; ' + '; '.join(parts)
