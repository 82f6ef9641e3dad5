"""A sweep's results: each finished run's reported numbers, read from its run directory
(or a runs.csv row), and a cell's runs with their mean ± sample std; tables.py lays them out.

Each run contributes one number, the test error (%) at the step of best validation error
(`metrics['best']['test_error']`, the model selection of
docs/algorithm.md#data-and-model-selection), or the test error of its last evaluation when
the run had no validation split. Only finished runs count. A cell's number is the
mean ± sample std (ddof = 1) over its runs and their number n.

Runs are found on disk as `<root>/<cell id>/seed_*/metrics.json`, so results can be read
at any time, also while a sweep is running or after runs were added. runs.csv (`runs_csv`,
`read_runs_csv`) keeps them one line per run, for a table whose run directories are gone.
"""
import csv
import dataclasses
import glob
import io
import math
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl import cells as cells_lib
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import wall_time
from tf_ipmssl.sweep import plan as plan_lib


# In an archive's run directory: the CPU of the machine that saw the run finish, for a run
# whose versions.json does not name its own (sweep/archive.py).
ARCHIVED_ON_FILE = 'archived_on.json'
# At the top of a root or archive: runs whose record was lost, one runs.csv row each; they
# count as finished runs of their cells (sweep/archive.py).
RECORDLESS_ROWS_FILE = 'runs_without_record.csv'


@dataclasses.dataclass(frozen=True)
class RunResult:
  """One finished run: its seed, reported test error (%) and where it came from."""
  seed: int
  test_error: float
  model_dir: str
  dataset: Optional[str] = None  # The dataset it trained on (dataset.json).
  labels: Optional[str] = None  # Its label count, or 'all' (operative_config.gin).
  steps: Optional[int] = None
  wall_seconds: Optional[float] = None  # Of its last bin/train session (metrics.json).
  # The error (%) on its labeled training images at the best validation step and at the
  # last evaluation (None where its metrics.json lacks it: older ones do, reporting.py).
  labeled_error: Optional[float] = None
  last_labeled_error: Optional[float] = None
  # The test error (%) at its last evaluation (metrics.json's `final`; None where that
  # lacks it), beside the reported one of the best validation step.
  last_test_error: Optional[float] = None
  cpu: Optional[str] = None  # The CPU it trained on (cpu_of; None where no file names it).
  # The lowest labeled-set error (%) over its evaluations, where a reader of its eval curve
  # gave it (None: not read).
  lowest_labeled_error: Optional[float] = None
  # Its wall time by part, seconds in wall_time.PARTS order (metrics.json's `wall_split`;
  # None where that lacks it: older ones do, reporting.py).
  wall_split: Optional[Tuple[float, ...]] = None
  # False for a run that stands only as a row of RECORDLESS_ROWS_FILE.
  has_record: bool = True
  # The best validation step where a reader of its eval curve took the reported error at
  # another step than metrics.json's; None: metrics.json's.
  best_step: Optional[int] = None
  # The balanced test error (%) and each class's test error ((class name, % or None), in
  # label order) at the reported step (metrics.json's per-class results, reporting.py;
  # None where its metrics.json lacks them: older ones do).
  balanced_error: Optional[float] = None
  class_errors: Optional[Tuple[Tuple[str, Optional[float]], ...]] = None


@dataclasses.dataclass(frozen=True)
class CellResult:
  """The finished runs of one cell.

  Attributes:
    cell: the cell.
    runs: its finished runs, in seed order.
    unfinished: number of run directories without a finished metrics.json.
  """
  cell: cells_lib.Cell
  runs: Tuple[RunResult, ...] = ()
  unfinished: int = 0

  @property
  def errors(self) -> Tuple[float, ...]:
    return tuple(run.test_error for run in self.runs)

  @property
  def seeds(self) -> Tuple[int, ...]:
    return tuple(run.seed for run in self.runs)

  @property
  def datasets(self) -> Tuple[str, ...]:
    """The datasets the runs trained on, e.g. ('fashion_mnist',) under the CPU-quick preset."""
    return tuple(dict.fromkeys(run.dataset for run in self.runs if run.dataset))

  @property
  def n(self) -> int:
    return len(self.errors)

  @property
  def mean(self) -> Optional[float]:
    return mean_std(self.errors)[0]

  @property
  def std(self) -> Optional[float]:
    """Sample standard deviation; None for fewer than two runs."""
    return mean_std(self.errors)[1]

  @property
  def text(self) -> str:
    """'17.50 ± 0.30 (n=2)', '17.50 (n=1)' or '–'."""
    if not self.errors:
      return '–'
    return f'{cells_lib.format_error(self.mean, self.std)} (n={self.n})'


def earliest_tied_step(validation: Dict[int, float]) -> Optional[int]:
  """The best step under the trainer's rule (training/loop.lower_error): the earliest
  evaluation of the lowest validation error, the errors compared as their float32 values
  (the event files' own); None for an empty curve."""
  if not validation:
    return None
  lowest = min(validation.values())
  return min(step for step, value in validation.items() if value == lowest)


def different_cpus(first: RunResult, second: RunResult) -> bool:
  """Whether two runs trained on CPUs known to differ (both known, not the same); their
  kernels round differently, so one run's error moves between CPU families (claims.CPU_NOTE,
  the results pages' note)."""
  return first.cpu is not None and second.cpu is not None and first.cpu != second.cpu


# Marks a difference between two runs that trained on different CPUs.
CPU_MARK = '†'


def paired_differences(first: 'CellResult', second: 'CellResult'
                       ) -> Tuple[Tuple[int, ...], Tuple[float, ...], Tuple[bool, ...]]:
  """(shared seeds, first − second per shared seed, whether that seed's two runs trained on
  different CPUs), in seed order."""
  other = {run.seed: run for run in second.runs}
  runs = sorted((run.seed, run, other[run.seed]) for run in first.runs if run.seed in other)
  return (tuple(s for s, _, _ in runs), tuple(a.test_error - b.test_error for _, a, b in runs),
          tuple(different_cpus(a, b) for _, a, b in runs))


def mean_std(values: Sequence[float]) -> Tuple[Optional[float], Optional[float]]:
  """(mean, sample standard deviation) of values; None for a mean of none and for the std
  of fewer than two."""
  if not values:
    return None, None
  mean = sum(values) / len(values)
  if len(values) < 2:
    return mean, None
  return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def run_error(metrics: dict) -> Optional[float]:
  """The reported test error of one run's metrics (best-validation, else the last
  evaluation's)."""
  best = (metrics.get('best') or {}).get('test_error')
  if best is not None:
    return float(best)
  last = (metrics.get('final') or {}).get('test_error')
  return None if last is None else float(last)


def _dataset_of(model_dir: str) -> Optional[str]:
  dataset = run_files.read_json(model_dir, run_files.DATASET_FILE, unreadable_ok=True)
  return None if dataset is None else dataset.get('name')


_NUM_LABELED = re.compile(r'^build_ssl_data\.num_labeled = (\S+)$', re.MULTILINE)


def _labels_of(model_dir: str) -> Optional[str]:
  """The run's label count as its operative config binds it ('all' for None)."""
  try:
    with open(os.path.join(model_dir, run_files.OPERATIVE_CONFIG_FILE)) as f:
      match = _NUM_LABELED.search(f.read())
  except OSError:
    return None
  if match is None:
    return None
  return 'all' if match.group(1) == 'None' else match.group(1)


def seed_of(model_dir: str) -> int:
  name = os.path.basename(model_dir)
  try:
    return int(name[len(plan_lib.SEED_DIR_PREFIX):])
  except ValueError:
    return -1


def collect_cell(root: str, cell: cells_lib.Cell,
                 seeds: Optional[Sequence[int]] = None) -> CellResult:
  """The finished runs of `cell` under root (all seed_* directories, or only `seeds`),
  and the rows of root's RECORDLESS_ROWS_FILE for seeds without a directory."""
  pattern = os.path.join(root, *cell.id.split('/'), f'{plan_lib.SEED_DIR_PREFIX}*')
  model_dirs = sorted((d for d in glob.glob(pattern) if os.path.isdir(d)), key=seed_of)
  if seeds is not None:
    model_dirs = [d for d in model_dirs if seed_of(d) in set(seeds)]
  runs, unfinished = [], 0
  for model_dir in model_dirs:
    metrics = run_files.read_metrics(model_dir, unreadable_ok=True)
    error = run_error(metrics) if metrics and metrics.get('finished') else None
    if error is None:
      unfinished += 1
      continue
    runs.append(RunResult(seed=seed_of(model_dir), test_error=error, model_dir=model_dir,
                          dataset=_dataset_of(model_dir), labels=_labels_of(model_dir),
                          steps=metrics.get('step'),
                          wall_seconds=_wall_seconds(metrics),
                          labeled_error=_error(metrics, 'best', 'labeled_error'),
                          last_labeled_error=_error(metrics, 'final', 'labeled_error'),
                          last_test_error=_error(metrics, 'final', 'test_error'),
                          cpu=cpu_of(model_dir), wall_split=_wall_split(metrics),
                          **_class_results(metrics)))
  seen = {seed_of(d) for d in model_dirs}
  runs += [run for run in _recordless_runs(root, cell.id)
           if run.seed not in seen and (seeds is None or run.seed in set(seeds))]
  return CellResult(cell, tuple(sorted(runs, key=lambda r: r.seed)), unfinished)


def _recordless_runs(root: str, cell_id: str) -> Tuple[RunResult, ...]:
  path = os.path.join(root, RECORDLESS_ROWS_FILE)
  if not os.path.exists(path):
    return ()
  result = read_runs_csv(path, (cell_id,)).get(cell_id)
  if result is None:
    return ()
  return tuple(dataclasses.replace(run, has_record=False) for run in result.runs)


def recordless_seeds(root: str, cell_id: str) -> Tuple[int, ...]:
  """The seeds of `cell_id` that stand as rows of root's RECORDLESS_ROWS_FILE."""
  return tuple(run.seed for run in _recordless_runs(root, cell_id))


def _class_results(metrics):
  """RunResult's balanced_error and class_errors of a run's metrics.json, at the step its
  test error is reported from (run_error's)."""
  which = 'best' if (metrics.get('best') or {}).get('step', -1) >= 0 else 'final'
  errors = (metrics.get(which) or {}).get('test_class_errors')
  return {'balanced_error': _error(metrics, which, 'test_balanced_error'),
          'class_errors': None if errors is None else tuple(errors.items())}


def _error(metrics, which, key):
  """metrics.json's `which` (its key 'best' or 'final') error `key`; None where absent or
  NaN."""
  value = (metrics.get(which) or {}).get(key)
  return None if value is None or value != value else float(value)


def cpu_of(model_dir: str) -> Optional[str]:
  """The CPU the run trained on (versions.json's, else that of the machine that archived it
  as it finished, ARCHIVED_ON_FILE; None if neither names one): its model name and, for an
  AVX-512 CPU, vendor, family and model — 'AMD EPYC avx512f AuthenticAMD-25-17' — since a
  model name such as 'AMD EPYC' spans CPUs whose kernels round differently."""
  versions = run_files.read_json(model_dir, run_files.VERSIONS_FILE, unreadable_ok=True)
  cpu = ((versions or {}).get('numerics') or {}).get('cpu')
  if cpu is None:
    cpu = (run_files.read_json(model_dir, ARCHIVED_ON_FILE, unreadable_ok=True) or {}).get(
        'cpu')
  if cpu is None:
    return None
  kernels = ' '.join(part for part in (cpu.get('signature') or '').split()
                     if not part.startswith('tensorflow-'))
  return ' '.join(part for part in (cpu.get('model_name'), kernels) if part) or None


def _wall_split(metrics):
  split = metrics.get('wall_split')
  return None if split is None else tuple(float(split[part]) for part in wall_time.PARTS)


def _wall_seconds(metrics):
  """The run's wall time over all its sessions; where metrics.json lacks `wall_seconds`
  (older ones do: reporting.py), that of its last session."""
  wall = metrics.get('wall_seconds')
  return metrics.get('wall_seconds_this_session') if wall is None else wall


def collect(root: str, cells: Sequence[cells_lib.Cell],
            seeds: Optional[Sequence[int]] = None) -> Dict[str, CellResult]:
  """{cell id: CellResult} for the given cells."""
  return {cell.id: collect_cell(root, cell, seeds) for cell in cells}


# runs.csv's columns of the wall time by part.
_SPLIT_COLUMNS = [f'{part}_seconds' for part in wall_time.PARTS]


def runs_csv(results: Dict[str, CellResult]) -> str:
  """One line per finished run: cell, seed, test error, dataset, labels, steps, wall time,
  labeled-set errors, CPU and the wall time by part.

  The run's directory is <root>/<cell>/seed_<seed>; wall_seconds is the run's wall time
  summed over its bin/train sessions (metrics.json's `wall_seconds`; where that lacks it,
  the last session's); labeled_error and final_labeled_error: the
  error on its labeled training images at the best validation step and at the end;
  final_test_error: the test error at the last evaluation; cpu:
  the CPU (versions.json, cpu_of); record: 'no' for a run that stands only as a row
  of RECORDLESS_ROWS_FILE (its record was lost), else 'yes'; startup_seconds,
  training_seconds, ...: its wall time by part (metrics.json's `wall_split`,
  wall_time.PARTS), adding up to wall_seconds; each blank where the run's files lack it. A
  runs.csv written before a column existed lacks it (read_runs_csv reads it as blank), and
  rows of runs trained before metrics.json kept the last evaluation's test error have a
  blank final_test_error.
  """
  out = io.StringIO()
  writer = csv.writer(out, lineterminator='\n')
  writer.writerow(['cell', 'seed', 'test_error', 'paper_error', 'dataset', 'labels', 'steps',
                   'wall_seconds', 'labeled_error', 'final_labeled_error', 'final_test_error',
                   'cpu', 'record'] + _SPLIT_COLUMNS)
  for result in results.values():
    for run in result.runs:
      wall = '' if run.wall_seconds is None else f'{run.wall_seconds:.0f}'
      split = ([''] * len(_SPLIT_COLUMNS) if run.wall_split is None
               else [f'{seconds:.1f}' for seconds in run.wall_split])
      paper = result.cell.paper_error
      writer.writerow([result.cell.id, run.seed, f'{run.test_error:.4f}',
                       '' if paper is None else f'{paper:.2f}', run.dataset or '',
                       run.labels or '', '' if run.steps is None else run.steps, wall,
                       blank(run.labeled_error), blank(run.last_labeled_error),
                       blank(run.last_test_error), run.cpu or '',
                       'yes' if run.has_record else 'no'] + split)
  return out.getvalue()


def read_runs_csv(path: str, cell_ids: Optional[Sequence[str]] = None
                  ) -> Dict[str, CellResult]:
  """{cell id: CellResult} from a runs.csv that `runs_csv` wrote (a committed table's runs,
  whose run directories are gone), of every cell or of `cell_ids`; each run's model_dir is
  '' and unknown columns blank. A cell of a table of your own must be registered first
  (table_file.load)."""
  def number(row, key, kind=float):
    value = row.get(key)
    return None if value in (None, '') else kind(value)
  by_cell: Dict[str, List[RunResult]] = {}
  with open(path, newline='') as f:
    for row in csv.DictReader(f):
      if cell_ids is not None and row['cell'] not in cell_ids:
        continue
      split = tuple(number(row, column) for column in _SPLIT_COLUMNS)
      by_cell.setdefault(row['cell'], []).append(RunResult(
          seed=int(row['seed']), test_error=float(row['test_error']), model_dir='',
          dataset=row.get('dataset') or None, labels=row.get('labels') or None,
          steps=number(row, 'steps', int), wall_seconds=number(row, 'wall_seconds'),
          labeled_error=number(row, 'labeled_error'),
          last_labeled_error=number(row, 'final_labeled_error'),
          last_test_error=number(row, 'final_test_error'), cpu=row.get('cpu') or None,
          wall_split=None if None in split else split, has_record=row.get('record') != 'no'))
  return {cell_id: CellResult(cells_lib.get_cell(cell_id),
                              tuple(sorted(runs, key=lambda r: r.seed)))
          for cell_id, runs in by_cell.items()}


def blank(value):
  """A CSV cell of an error: '' for None, else two decimals."""
  return '' if value is None else f'{value:.2f}'
