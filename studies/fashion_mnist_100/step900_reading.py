"""The step-900 reading of the confirmation (docs/results/confirmation.md): is the jump of
broadcast Ω_S(f) at its last evaluation a defect at a run's end or the training's own?

Broadcast Ω_S(f) (table2/cifar10_sobolev_f with the broadcast f; records in
docs/results/broadcast_f_records) ended with a jump of its validation error at step 900 on two
of its three splits. The reading trains it again with the commit and binding that trained it
(bbbb1c3), on one CPU (records in docs/results/confirmation_records/step900): split 0 at 900
steps (steps_900), splits 0 and 1 at 1,800 steps (steps_1800).

The reading was planned as an exact comparison: split 0's 900-step run and the first 900
steps of its 1,800-step run are one computation unless something depends on the run's length.
That commit's processes are not one computation (their curves part within the first 150 steps,
as a second process of the 900-step run, evaluated up to step 200, shows: probe_900_again),
so the comparison can only say where they part. The rule the confirmation fixed before the
runs called a jump in both runs, staying or recovering in the longer one, the training's own;
the reading asks the part of it the runs can still answer: does a 1,800-step run jump before
its end (`cause`)?

A jump is a rise of JUMP points or more of the validation error from one evaluation to the
next (the originals rose 24.7 and 42.0 points; a threshold read after seeing them, so this is
a reading, not a test). Every other record's rises are given beside it: at its last
evaluation, and anywhere before it.
"""
import dataclasses
import os
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import results as results_lib

CELL = 'table2/cifar10_sobolev_f'
SHORT, LONG, PROBE = 'steps_900', 'steps_1800', 'probe_900_again'  # Under the records.
VALIDATION, LABELED = 'eval/validation_error', 'eval/labeled_error'
JUMP = 10.0  # Points of validation error from one evaluation to the next.

Curve = Dict[int, float]  # {step: error (%)}


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
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  curves = event_files.read_eval_curves(model_dir)
  validation = curves.get(VALIDATION)
  if not validation:
    return None
  return Run(seed=results_lib.seed_of(model_dir), steps=max(validation),
             cpu=results_lib.cpu_of(model_dir), validation=validation,
             labeled=curves.get(LABELED, {}))


def read_runs(model_dirs: Sequence[str]) -> List[Run]:
  """The finished runs with a validation curve among `model_dirs`, each read once."""
  return [run for run in map(read_run, model_dirs) if run is not None]


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
  short: Dict[int, Run]  # Again: 900 steps,
  long: Dict[int, Run]  # 1,800 steps,
  probe: Dict[int, Run]  # and the 900-step run again, stopped early.


def load(step900_records: str, originals_records: str) -> Reading:
  """The reading's runs (step900_records/<part>/<cell>/seed_<s>) and the originals
  (originals_records/<cell>/seed_<s>)."""
  part = lambda name, finished_only=True: _runs(  # pylint: disable=unnecessary-lambda-assignment
      os.path.join(step900_records, name), finished_only)
  return Reading(originals=_runs(originals_records), short=part(SHORT), long=part(LONG),
                 probe=part(PROBE, finished_only=False))


def jumps_before_the_end(run: Run) -> List[Tuple[int, float]]:
  """(step, rise) of each jump of the run's validation error before its last evaluation."""
  return [(step, rise) for step, rise in rises(run.validation)
          if rise >= JUMP and step < run.steps]


# The causes `cause` names.
WAITING = 'waiting'
TRAINING = 'the training'
AT_THE_END_ONLY = 'at the end only'
NO_JUMP = 'no jump'


def cause(reading: Reading, planned_long: int = 2) -> str:
  """What the reading's runs point to, once its `planned_long` 1,800-step runs are in: a
  jump in a 1,800-step run before its end is the training's own (TRAINING); a jump only at
  the end of a 900-step run points to the run's end (AT_THE_END_ONLY); no jump tells
  nothing (NO_JUMP)."""
  if len(reading.long) < planned_long or not reading.short:
    return WAITING
  if any(jumps_before_the_end(run) for run in reading.long.values()):
    return TRAINING
  ends = [last_rise(run.validation) for run in reading.short.values()]
  if any(rise is not None and rise >= JUMP for rise in ends):
    return AT_THE_END_ONLY
  return NO_JUMP


# The outcomes the confirmation's rule fixed before the runs (`declared_outcome`).
THE_END, THE_TRAINING, NEITHER = 'the run\'s end', 'the training\'s own', 'neither'


def declared_outcome(reading: Reading, seed: int = 0) -> Optional[str]:
  """Which outcome the rule fixed before the runs occurred on split `seed`: the run's end
  (its 900- and 1,800-step runs equal before step 900, the 900-step run alone jumping at its
  end), the training's own (both jumping, the longer one before its end) or neither; None
  before both runs are recorded."""
  short, long = reading.short.get(seed), reading.long.get(seed)
  if short is None or long is None:
    return None
  short_jumps = (last_rise(short.validation) or 0.0) >= JUMP
  long_jumps = bool(jumps_before_the_end(long))
  if short_jumps and long_jumps:
    return THE_TRAINING
  parted = short.first_difference(long)
  if short_jumps and not long_jumps and (parted is None or parted >= short.steps):
    return THE_END
  return NEITHER


def declared_text(reading: Reading, seed: int = 0) -> Optional[str]:
  """The declared outcomes in words, where neither occurred; None otherwise."""
  if declared_outcome(reading, seed) != NEITHER:
    return None
  short, long = reading.short[seed], reading.long[seed]
  parted = short.first_difference(long)
  jumped = [step for step, _ in jumps_before_the_end(long)]
  short_jumps = (last_rise(short.validation) or 0.0) >= JUMP
  return ('none of the outcomes the reading\'s rule fixed before the runs occurred (split '
          f'{seed}: the 900- and 1,800-step runs '
          + (f'part at step {parted}' if parted is not None else 'are equal up to step 900')
          + '; the 900-step run trained again '
          + ('jumps' if short_jumps else 'does not jump') + ' at its end; the 1,800-step run '
          + (f'jumps at step {jumped[0]}' if jumped else 'does not jump before its end') + ')')


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
    WAITING: 'Its runs are not all recorded yet: no cause is named.',
    TRAINING: ('Read after the runs (exploratory): a 1,800-step run jumps before its end, so '
               'a jump of this cell can happen where no run ends; what causes it is not '
               'shown.'),
    AT_THE_END_ONLY: ('The 900-step run jumps at its end and no 1,800-step run jumps before '
                      'its end: the reading points to the run\'s end.'),
    NO_JUMP: ('None of its runs jumps: the jump did not recur, and the reading names no '
              'cause.'),
}


def original_trainer_line(reading: Reading, seed: int = 0) -> Optional[str]:
  """Where split `seed`'s 900-step run parts from its 1,800-step run and from a second
  process of it; None before either pair is recorded."""
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
  return (f'- Split {seed}: {told}. The trainer\'s processes differ in their last bits '
          '(docs/reliability.md), so its runs are not one computation and their curves '
          'cannot be compared step for step.')


def mid_run_jumps(runs: Sequence[Run]) -> Tuple[int, int, List[int]]:
  """(runs with a jump before their last evaluation, runs, the steps of those jumps)."""
  found = [jumps_before_the_end(run) for run in runs]
  return (sum(bool(jumps) for jumps in found), len(runs),
          sorted(step for jumps in found for step, _ in jumps))


def other_last_rises(runs: Sequence[Run]) -> List[float]:
  """Each run's validation rise at its last evaluation (runs with two evaluations or more)."""
  return [rise for rise in (last_rise(run.validation) for run in runs) if rise is not None]


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


SHORT_CONCLUSIONS = {
    WAITING: 'its runs are not all recorded yet',
    TRAINING: ('read after the runs (exploratory), a 1,800-step run jumps before its end; '
               'the cause is not shown'),
    AT_THE_END_ONLY: "it points to the run's end",
    NO_JUMP: 'it did not recur; no cause named',
}


def longer_run_jumps(reading: Reading) -> List[Tuple[int, int, float]]:
  """(split, step, rise) of each jump of a 1,800-step run before its end."""
  return sorted((run.seed, step, rise) for run in reading.long.values()
                for step, rise in jumps_before_the_end(run))


def verdict_text(reading: Reading) -> str:
  """README's words: the cause, and where a 1,800-step run jumps before its end."""
  found = cause(reading)
  jumps = longer_run_jumps(reading)
  declared = declared_text(reading) if found != WAITING else None
  where = ''.join(f'; split {seed} jumps at step {step} ({rise:+.1f}) of 1,800 and recovers'
                  if run_recovers(reading.long[seed], step) else
                  f'; split {seed} jumps at step {step} ({rise:+.1f}) of 1,800'
                  for seed, step, rise in jumps) if found == TRAINING else ''
  return ('none of the outcomes its rule fixed before the runs occurred; ' if declared
          else '') + SHORT_CONCLUSIONS[found] + where


def run_recovers(run: Run, step: int) -> bool:
  """Whether the run's validation error ends below its value before the jump at `step`."""
  before = max(s for s in run.validation if s < step)
  return run.validation[run.steps] <= run.validation[before]


def _steps_text(steps: Sequence[int]) -> str:
  if not steps:
    return ''
  return f', at step {steps[0]}' if steps[0] == steps[-1] else f', at steps {steps[0]}–{steps[-1]}'


def part(reading: Reading, others: Sequence[str]) -> str:
  """conclusions.md's step-900 part: the runs, what they point to, and the other records'
  rises (`others`: their model dirs)."""
  lines = []
  for label, runs in (('Original (broadcast_f_records), 900 steps', reading.originals),
                      ('Again, 900 steps', reading.short), ('Again, 1,800 steps', reading.long)):
    lines += [_run_line(label, run) for _, run in sorted(runs.items())]
  original = original_trainer_line(reading)
  if original:
    lines.append(original)
  where = ''.join(f' Split {seed} at step {step} ({rise:+.1f}).'
                  for seed, step, rise in longer_run_jumps(reading))
  declared = declared_text(reading) if cause(reading) != WAITING else None
  if declared:
    lines.append(f'- {declared[0].upper()}{declared[1:]}.')
  lines.append(f'- {CONCLUSIONS[cause(reading)]}{where}')
  other_runs = read_runs(others)
  last = other_last_rises(other_runs)
  if last:
    with_jump, runs, steps = mid_run_jumps(other_runs)
    lines.append(f'- Every other record (n={len(last)}): its rise at its last evaluation, '
                 f'median {statistics.median(last):+.2f}, largest {max(last):+.1f} points; a '
                 f'jump before its last evaluation in {with_jump} of {runs}'
                 + _steps_text(steps) + '.')
  return '\n'.join(lines)
