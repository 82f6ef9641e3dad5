"""The step-900 reading of the confirmation (docs/results/confirmation.md): is the jump of
broadcast Ω_S(f) at its last evaluation a defect at a run's end or the training's own?

Broadcast Ω_S(f) (table2/cifar10_sobolev_f with the broadcast f; records in
docs/results/broadcast_f_records) ended with a jump of its validation error at step 900 on two
of its three splits. The reading trains it again with the commit and binding that trained it,
on one CPU: split 0 at 900 steps, and splits 0 and 1 at 1,800 steps (records in
docs/results/confirmation_records/step900). If nothing in a run depends on its length before
its end, split 0's 900-step run and the first 900 steps of its 1,800-step run are one
computation, so their validation curves are equal there, step 900 included:

- equal before step 900, then unequal at it: the run's end changes what it evaluates (a
  defect);
- equal through step 900: nothing happens at a run's end; a jump there in both is the
  training's own, and the 1,800-step runs show whether it stays or recovers;
- unequal before step 900: something depends on the run's length from earlier on (a defect
  of another kind).

A jump is a rise of JUMP points or more of the validation error from one evaluation to the
next (the originals rose 24.7 and 42.0 points; a threshold read after seeing them, so this is
a reading, not a test). Every record's rise at its last evaluation is given beside it.
"""
import dataclasses
import os
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import tables as tables_lib

CELL = 'table2/cifar10_sobolev_f'
SHORT, LONG = 'steps_900', 'steps_1800'  # Folders under the reading's records.
VALIDATION, LABELED = 'eval/validation_error', 'eval/labeled_error'
JUMP = 10.0  # Points of validation error from one evaluation to the next.

Curve = Dict[int, float]  # {step: error (%)}


def read_curve(model_dir: str, tag: str = VALIDATION) -> Curve:
  """The run's eval curve of `tag`; a step evaluated twice (a resumed run) keeps the later
  value. {} where the run keeps no curve."""
  from tf_ipmssl.training import tensorboard  # pylint: disable=g-import-not-at-top
  directory = os.path.join(model_dir, run_files.EVAL_SUMMARY_DIR)
  return dict(tensorboard.read_scalars(directory).get(tag, ()))


def rises(curve: Curve) -> List[Tuple[int, float]]:
  """(step, error at step − error at the evaluation before it) from the second evaluation on."""
  steps = sorted(curve)
  return [(b, curve[b] - curve[a]) for a, b in zip(steps, steps[1:])]


def last_rise(curve: Curve) -> Optional[float]:
  found = rises(curve)
  return found[-1][1] if found else None


def largest_rise(curve: Curve) -> Optional[Tuple[int, float]]:
  """(step, rise) of the largest rise; the earliest of equal ones. None under two evaluations."""
  found = rises(curve)
  return max(found, key=lambda item: (item[1], -item[0])) if found else None


def first_difference(short: Curve, long: Curve) -> Optional[int]:
  """The first step of `short` whose value `long` does not equal exactly (or lacks); None
  when `long` repeats all of `short`. Exact: both runs count the same images wrong when they
  are one computation."""
  for step in sorted(short):
    if long.get(step) != short[step]:
      return step
  return None


@dataclasses.dataclass(frozen=True)
class Run:
  seed: int
  steps: int  # The run's last evaluated step.
  cpu: Optional[str]
  validation: Curve
  labeled: Curve


def read_run(model_dir: str) -> Optional[Run]:
  """A finished run's curves (None if its metrics.json does not say finished)."""
  metrics = run_files.read_json(model_dir, run_files.METRICS_FILE, unreadable_ok=True) or {}
  if not metrics.get('finished'):
    return None
  validation = read_curve(model_dir)
  if not validation:
    return None
  return Run(seed=tables_lib.seed_of(model_dir), steps=max(validation),
             cpu=tables_lib.cpu_of(model_dir), validation=validation,
             labeled=read_curve(model_dir, LABELED))


def _runs(folder: str) -> Dict[int, Run]:
  cell_dir = os.path.join(folder, CELL)
  if not os.path.isdir(cell_dir):
    return {}
  found = {}
  for name in sorted(os.listdir(cell_dir)):
    run = read_run(os.path.join(cell_dir, name)) if name.startswith('seed_') else None
    if run is not None:
      found[run.seed] = run
  return found


@dataclasses.dataclass(frozen=True)
class Reading:
  originals: Dict[int, Run]  # The broadcast Ω_S(f) runs that jumped, by split.
  short: Dict[int, Run]  # 900 steps.
  long: Dict[int, Run]  # 1,800 steps.


def load(step900_records: str, originals_records: str) -> Reading:
  """The reading's runs (step900_records/{steps_900,steps_1800}/<cell>/seed_<s>) and the
  originals (originals_records/<cell>/seed_<s>)."""
  return Reading(originals=_runs(originals_records),
                 short=_runs(os.path.join(step900_records, SHORT)),
                 long=_runs(os.path.join(step900_records, LONG)))


# The causes `cause` names.
WAITING = 'waiting'
OTHER_CPUS = 'other CPUs'
RUN_END = 'the run end'
EARLIER = 'the run length earlier'
TRAINING = 'the training'
NO_JUMP = 'no jump'


def cause(reading: Reading, seed: int = 0) -> Tuple[str, Optional[int]]:
  """(what split `seed`'s two runs point to, the first step where their curves differ)."""
  short, long = reading.short.get(seed), reading.long.get(seed)
  if short is None or long is None:
    return WAITING, None
  if short.cpu is None or short.cpu != long.cpu:
    return OTHER_CPUS, None
  step = first_difference(short.validation, long.validation)
  if step is None:
    rise = last_rise(short.validation)
    return (TRAINING if rise is not None and rise >= JUMP else NO_JUMP), None
  return (RUN_END if step == short.steps else EARLIER), step


def _points(value: Optional[float]) -> str:
  return '–' if value is None else f'{value:+.1f}'


def _run_line(label: str, run: Run) -> str:
  top = largest_rise(run.validation)
  end = run.validation[run.steps]
  text = (f'- {label}, split {run.seed}: validation {run.validation.get(900, float("nan")):.2f}% '
          f'at step 900 ({_points(_rise_at(run.validation, 900))} from the evaluation before), '
          f'{end:.2f}% at its last step {run.steps}, lowest {min(run.validation.values()):.2f}%')
  if top is not None:
    text += f'; largest rise {top[1]:+.1f} at step {top[0]}'
  if run.labeled:
    text += f'; labeled-set error {run.labeled[run.steps]:.0f}% at the end'
  return text + (f' ({run.cpu})' if run.cpu else '') + '.'


def _rise_at(curve: Curve, step: int) -> Optional[float]:
  return dict(rises(curve)).get(step)


CONCLUSIONS = {
    WAITING: 'Split 0\'s two runs are not both recorded yet: no cause is named.',
    OTHER_CPUS: ('Split 0\'s two runs trained on different CPUs, so their curves can differ '
                 'from rounding alone: the comparison cannot name a cause.'),
    RUN_END: ('Split 0\'s two runs are one computation up to the evaluation before step 900 '
              'and differ at step 900: the run\'s end changes what it evaluates, a defect.'),
    EARLIER: ('Split 0\'s two runs differ before step 900: something depends on the run\'s '
              'length before its end, a defect.'),
    TRAINING: ('Split 0\'s two runs are one computation through step 900 (equal validation '
               'curves, step 900 included) and both jump there: the jump is the training\'s '
               'own, not the run\'s end.'),
    NO_JUMP: ('Split 0\'s two runs are one computation through step 900 (equal validation '
              'curves, step 900 included): nothing in a run depends on its length before '
              'its end, so the last evaluation reads the trained critic as every other '
              'does. On this CPU the jump did not recur at step 900.'),
}


def other_last_rises(model_dirs: Sequence[str]) -> List[float]:
  """Each finished run's validation rise at its last evaluation (runs with a curve of two
  evaluations or more)."""
  found = []
  for model_dir in model_dirs:
    run = read_run(model_dir)
    rise = None if run is None else last_rise(run.validation)
    if rise is not None:
      found.append(rise)
  return found


def record_dirs(root: str, leave_out: Sequence[str] = ()) -> List[str]:
  """Every run record (a folder with metrics.json) under root, but those under the folders
  `leave_out` (relative to root)."""
  found = []
  for folder, _, files in os.walk(root):
    relative = os.path.relpath(folder, root)
    if run_files.METRICS_FILE in files and not any(
        relative == out or relative.startswith(out + os.sep) for out in leave_out):
      found.append(folder)
  return sorted(found)


def part(reading: Reading, others: Sequence[float]) -> str:
  """conclusions.md's step-900 part: the runs, what they point to, the other records."""
  lines = [_run_line('Original (broadcast_f_records), 900 steps', run)
           for _, run in sorted(reading.originals.items())]
  lines += [_run_line('Again, 900 steps', run) for _, run in sorted(reading.short.items())]
  lines += [_run_line('Again, 1,800 steps', run) for _, run in sorted(reading.long.items())]
  found, step = cause(reading)
  lines.append('- ' + CONCLUSIONS[found] + (f' First difference at step {step}.'
                                            if step is not None else ''))
  if others:
    lines.append(f'- Every other record\'s rise at its last evaluation (n={len(others)}): '
                 f'median {statistics.median(others):+.2f}, largest {max(others):+.1f} '
                 f'points.')
  return '\n'.join(lines)
