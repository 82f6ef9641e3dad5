"""The supervised baseline a run is compared with on its final line (`train.baseline`).

A baseline is a cell of a results table written by `bin/sweep` (its `runs.csv`: one line
per finished run, see tf_ipmssl/sweep/tables.py) — e.g. the supervised row for the same
label budget. The final line then reads "... test error 17.90% ...; baseline
fashion_mnist_ssl/fashion_mnist_supervised_1000: 19.60 ± 0.30% (mean of 3 seeds)".
TensorFlow-free.
"""
import csv
import dataclasses
import os
import pathlib
import statistics
from typing import Optional

from tf_ipmssl import errors

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Baseline:
  cell: str
  mean: float
  std: Optional[float]
  n: int

  def text(self) -> str:
    spread = '' if self.std is None else f' ± {self.std:.2f}'
    return f'{self.cell}: {self.mean:.2f}{spread}% (mean of {self.n} seeds)'


def read_baseline(runs_csv: str, cell: str) -> Optional[Baseline]:
  """Mean ± sample std of the cell's test errors in runs_csv (relative to the repository
  root unless absolute); None when the file has no finished run of that cell."""
  path = runs_csv if os.path.isabs(runs_csv) else str(REPO_ROOT / runs_csv)
  if not os.path.isfile(path):
    return None
  with open(path, newline='') as f:
    rows = [r for r in csv.DictReader(f) if r.get('cell') == cell]
  try:
    values = [float(r['test_error']) for r in rows]
  except (KeyError, ValueError):
    raise errors.UserError(f'{path} is not a runs.csv written by bin/sweep') from None
  if not values:
    return None
  std = statistics.stdev(values) if len(values) > 1 else None
  return Baseline(cell, statistics.fmean(values), std, len(values))
