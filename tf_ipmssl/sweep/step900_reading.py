"""The step-900 reading of the confirmation (docs/results/confirmation.md): is the jump of
broadcast Ω_S(f) at its last evaluation a defect at a run's end or the training's own?

Broadcast Ω_S(f) (table2/cifar10_sobolev_f with the broadcast f; records in
docs/results/broadcast_f_records) ended with a jump of its validation error at step 900 on two
of its three splits. The reading (records in docs/results/confirmation_records/step900):

- steps_900, steps_1800: the commit and binding that trained the originals (bbbb1c3), on one
  CPU: split 0 at 900 steps, splits 0 and 1 at 1,800 steps. Do the longer runs jump, at step
  900 or elsewhere?
- probe_900_again: a second process of the 900-step run of split 0, stopped at step 225. That
  commit's processes differ in their last bits from the first steps on (Grappler's arithmetic
  optimizer, docs/reliability.md), so its two runs of split 0 cannot be one computation.
- deterministic_900, deterministic_1800: split 0 at 900 and 1,800 steps by the confirmation's
  training commit (whose processes build one graph), single-threaded with deterministic ops.
  If nothing in a run depends on its length before its end, these two are one computation,
  and their curves are equal through step 900:
  - equal before step 900, then unequal at it: the run's end changes what it evaluates (a
    defect);
  - equal through step 900: nothing happens at a run's end (the end of a run is the same code
    at both commits, training/loop.py's train_loop); a jump there is the training's own;
  - unequal before step 900: something depends on the run's length from earlier on.

Curves are compared on the validation and the labeled-set error, exactly (both count images).
A jump is a rise of JUMP points or more of the validation error from one evaluation to the
next (the originals rose 24.7 and 42.0 points; a threshold read after seeing them, so this is
a reading, not a test). Every other record's rise at its last evaluation is given beside it.
"""
import dataclasses
import os
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import tables as tables_lib

CELL = 'table2/cifar10_sobolev_f'
# Folders under the reading's records (see the module doc).
SHORT, LONG, PROBE = 'steps_900', 'steps_1800', 'probe_900_again'
DETERMINISTIC_SHORT, DETERMINISTIC_LONG = 'deterministic_900', 'deterministic_1800'
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

  def first_difference(self, other: 'Run') -> Optional[int]:
    """The first of this run's evaluations where `other` counts other errors (validation or
    labeled set); None where it repeats every one."""
    steps = [step for step in (first_difference(self.validation, other.validation),
                               first_difference(self.labeled, other.labeled))
             if step is not None]
    return min(steps) if steps else None


def read_run(model_dir: str, finished_only: bool = True) -> Optional[Run]:
  """A run's curves; None without a validation curve, or (finished_only) where its
  metrics.json does not say finished."""
  metrics = run_files.read_json(model_dir, run_files.METRICS_FILE, unreadable_ok=True) or {}
  if finished_only and not metrics.get('finished'):
    return None
  validation = read_curve(model_dir)
  if not validation:
    return None
  return Run(seed=tables_lib.seed_of(model_dir), steps=max(validation),
             cpu=tables_lib.cpu_of(model_dir), validation=validation,
             labeled=read_curve(model_dir, LABELED))


def _runs(folder: str, finished_only: bool = True) -> Dict[int, Run]:
  cell_dir = os.path.join(folder, CELL)
  if not os.path.isdir(cell_dir):
    return {}
  found = {}
  for name in sorted(os.listdir(cell_dir)):
    if name.startswith('seed_'):
      run = read_run(os.path.join(cell_dir, name), finished_only)
      if run is not None:
        found[run.seed] = run
  return found


@dataclasses.dataclass(frozen=True)
class Reading:
  """Each part's runs by split (see the module doc)."""
  originals: Dict[int, Run]  # The broadcast Ω_S(f) runs that jumped.
  short: Dict[int, Run]  # The originals' commit: 900 steps,
  long: Dict[int, Run]  # 1,800 steps,
  probe: Dict[int, Run]  # and the 900-step run again, stopped early.
  deterministic_short: Dict[int, Run]  # The confirmation's commit: 900 steps,
  deterministic_long: Dict[int, Run]  # 1,800 steps.


def load(step900_records: str, originals_records: str) -> Reading:
  """The reading's runs (step900_records/<part>/<cell>/seed_<s>) and the originals
  (originals_records/<cell>/seed_<s>)."""
  part = lambda name, finished_only=True: _runs(  # pylint: disable=unnecessary-lambda-assignment
      os.path.join(step900_records, name), finished_only)
  return Reading(originals=_runs(originals_records), short=part(SHORT), long=part(LONG),
                 probe=part(PROBE, finished_only=False),
                 deterministic_short=part(DETERMINISTIC_SHORT),
                 deterministic_long=part(DETERMINISTIC_LONG))


# The causes `cause` names.
WAITING = 'waiting'
OTHER_CPUS = 'other CPUs'
RUN_END = 'the run end'
EARLIER = 'the run length earlier'
TRAINING = 'the training'
NO_JUMP = 'no jump'


def cause(short: Optional[Run], long: Optional[Run]) -> Tuple[str, Optional[int]]:
  """(what a run and a longer run of one configuration point to, the first step where their
  curves differ)."""
  if short is None or long is None:
    return WAITING, None
  if short.cpu is None or short.cpu != long.cpu:
    return OTHER_CPUS, None
  step = short.first_difference(long)
  if step is None:
    rise = last_rise(short.validation)
    return (TRAINING if rise is not None and rise >= JUMP else NO_JUMP), None
  return (RUN_END if step == short.steps else EARLIER), step


def _points(value: Optional[float]) -> str:
  return '–' if value is None else f'{value:+.1f}'


def _rise_at(curve: Curve, step: int) -> Optional[float]:
  return dict(rises(curve)).get(step)


def _run_line(label: str, run: Run) -> str:
  top = largest_rise(run.validation)
  at_900 = run.validation.get(900)
  text = f'- {label}, split {run.seed}: validation '
  if at_900 is not None:
    text += (f'{at_900:.2f}% at step 900 ({_points(_rise_at(run.validation, 900))} from the '
             'evaluation before), ')
  text += (f'{run.validation[run.steps]:.2f}% at its last step {run.steps}, lowest '
           f'{min(run.validation.values()):.2f}%')
  if top is not None:
    text += f'; largest rise {top[1]:+.1f} at step {top[0]}'
  if run.labeled:
    text += f'; labeled-set error {run.labeled[run.steps]:.0f}% at the end'
  return text + (f' ({run.cpu})' if run.cpu else '') + '.'


CONCLUSIONS = {
    WAITING: 'not both recorded yet: no cause is named.',
    OTHER_CPUS: ('trained on different CPUs, so their curves can differ from rounding alone: '
                 'the comparison cannot name a cause.'),
    RUN_END: ('one computation up to the evaluation before step 900 and different at step '
              '900: the run\'s end changes what it evaluates, a defect.'),
    EARLIER: ('different before step 900: something depends on the run\'s length before its '
              'end, a defect.'),
    TRAINING: ('one computation through step 900 (equal curves, step 900 included), and both '
               'jump there: the jump is the training\'s own, not the run\'s end.'),
    NO_JUMP: ('one computation through step 900 (equal curves, step 900 included): nothing in '
              'a run depends on its length before its end, and its last evaluation reads the '
              'trained critic as every other evaluation does.'),
}
DETERMINISTIC_HEAD = ('Split 0\'s 900- and 1,800-step runs by the confirmation\'s trainer, with '
                      'deterministic ops: ')


def original_trainer_line(reading: Reading, seed: int = 0) -> Optional[str]:
  """Where the originals' trainer's runs of split `seed` part: its 900-step run against its
  1,800-step run and against a second process of it; None before either pair is recorded."""
  short = reading.short.get(seed)
  if short is None:
    return None
  parts = []
  long, probe = reading.long.get(seed), reading.probe.get(seed)
  if long is not None:
    parts.append(('its 900- and 1,800-step runs', short.first_difference(long)))
  if probe is not None:
    parts.append((f'its 900-step run and a second process of it (evaluated up to step '
                  f'{probe.steps})', short.first_difference(probe)))
  if not parts:
    return None
  told = '; '.join(f'{label} first differ at step {step}' if step is not None else
                   f'{label} are equal throughout' for label, step in parts)
  return (f'- Split {seed} by the originals\' trainer: {told}. Its processes differ in the '
          'last bits from the first steps on (docs/reliability.md), so its runs are not one '
          'computation and cannot tell the run\'s end from the rest.')


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
  lines = []
  for label, runs in (('Original (broadcast_f_records), 900 steps', reading.originals),
                      ('Again by the originals\' trainer, 900 steps', reading.short),
                      ('The same, 1,800 steps', reading.long),
                      ('The confirmation\'s trainer, deterministic ops, 900 steps',
                       reading.deterministic_short),
                      ('The same, 1,800 steps', reading.deterministic_long)):
    lines += [_run_line(label, run) for _, run in sorted(runs.items())]
  original = original_trainer_line(reading)
  if original:
    lines.append(original)
  found, step = cause(reading.deterministic_short.get(0), reading.deterministic_long.get(0))
  lines.append('- ' + DETERMINISTIC_HEAD + CONCLUSIONS[found]
               + (f' First difference at step {step}.' if step is not None else ''))
  if others:
    lines.append(f'- Every other record\'s rise at its last evaluation (n={len(others)}): '
                 f'median {statistics.median(others):+.2f}, largest {max(others):+.1f} '
                 f'points.')
  return '\n'.join(lines)
