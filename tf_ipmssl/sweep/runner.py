"""Runs a sweep's plan: one bin/train subprocess per run, `workers` runs at a time.

- A run whose metrics.json says `"finished": true` is skipped.
- Any other run is (re)started with its command; bin/train resumes by itself from the
  latest checkpoint of an interrupted run in the same model dir.
- A failing run is reported (exit status and the end of its log) and the sweep goes on.

Each run's output is appended to `<model_dir>/train.log`; one JSON line per run outcome is
appended to `<root>/sweep_log.jsonl`; each run that finishes gets its record's manifest, and
with an archive directory has its record copied there at once (`archive`). A record the
archive cannot keep (a read-only or full disk, an archive of other settings) is one line in
the report, the log and the summary, and the other runs go on. The reports, the log and
the summary are shared with the Ray backend (`ray_backend`), which runs the same `run_one`
as one Ray task per run.

With several workers each run gets an equal share of the CPU cores as TensorFlow threads
(TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS, unless already set): on a small machine,
small models train faster as parallel single-threaded runs than one after another.
"""
import concurrent.futures
import ctypes
import dataclasses
import datetime
import json
import os
import signal
import subprocess
import threading
import time
from typing import Callable, List, Optional, Sequence

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from tf_ipmssl import fault_injection
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import archive as archive_lib
from tf_ipmssl.sweep import plan as plan_lib

LOG_FILE = run_files.LOG_FILE
SWEEP_LOG_FILE = 'sweep_log.jsonl'

NEW, PARTIAL, FINISHED = 'new', 'partial', 'finished'
# Outcomes.
SKIPPED, SUCCEEDED, FAILED = 'skipped', 'succeeded', 'failed'


@dataclasses.dataclass(frozen=True)
class Outcome:
  """What happened to one run: status SKIPPED, SUCCEEDED or FAILED; `record_error`: why
  the archive could not keep the record of a run that finished (one line), else ''."""
  run: plan_lib.Run
  status: str
  returncode: Optional[int] = None
  seconds: float = 0.0
  log_tail: str = ''
  record_error: str = ''


def run_state(model_dir: str) -> str:
  """NEW (no directory), PARTIAL (started, not finished) or FINISHED."""
  if run_files.finished(model_dir):
    return FINISHED
  return PARTIAL if os.path.isdir(model_dir) else NEW


def tail(path: str, lines: int = 8) -> str:
  try:
    with open(path, errors='replace') as f:
      return ''.join(f.readlines()[-lines:]).rstrip()
  except OSError:
    return ''


def _append_jsonl(path: str, content: dict):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'a') as f:
    f.write(json.dumps(content) + '\n')


def _environment(threads: Optional[int] = None, checkout: Optional[str] = None) -> dict:
  """The runs' environment; `threads`: TensorFlow threads per run (None: TF's default);
  `checkout`: the tf_ipmssl checkout whose bin/train runs (None: this one)."""
  env = dict(os.environ)
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  if threads is not None:
    env.setdefault('TF_NUM_INTRAOP_THREADS', str(threads))
    env.setdefault('TF_NUM_INTEROP_THREADS', str(threads))
  # bin/train finds the package from its own location; this covers a non-installed copy.
  env['PYTHONPATH'] = os.pathsep.join(
      p for p in (checkout or str(cells_lib.REPO_ROOT), env.get('PYTHONPATH')) if p)
  return env


def threads_per_run(workers: int) -> Optional[int]:
  """TensorFlow threads for each of `workers` parallel runs (None for one worker)."""
  if workers <= 1:
    return None
  return max(1, (os.cpu_count() or 1) // workers)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _killed_with_parent():
  """A subprocess preexec_fn that has the child SIGKILLed when its parent dies (Linux), so
  that a trainer never outlives a killed sweep worker and races its retry on the same model
  dir; None where prctl is unavailable."""
  try:
    prctl = ctypes.CDLL(None, use_errno=True).prctl
  except (OSError, AttributeError):
    return None
  parent = os.getpid()

  def preexec():
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # The parent died before prctl took effect.
      os.kill(os.getpid(), signal.SIGKILL)

  return preexec


def run_one(run: plan_lib.Run, program: Sequence[str] = plan_lib.TRAIN_PROGRAM,
            threads: Optional[int] = None, die_with_parent: bool = False,
            checkout: Optional[str] = None) -> Outcome:
  """Trains (or resumes) one run to completion in a subprocess; never raises on failure.

  The command runs from `checkout` (default: this repository), so its relative bin/train
  and gin files are that checkout's: `bin/sweep --train_checkout` trains a long sweep with
  one commit's code while this checkout changes.

  With `die_with_parent`, the subprocess is killed when the calling process dies (call it
  from a thread that lives as long as the run: Linux ties this to the creating thread).
  """
  if run_state(run.model_dir) == FINISHED:
    return Outcome(run, SKIPPED)
  os.makedirs(run.model_dir, exist_ok=True)
  log_file = log_path(run)
  started = time.time()
  with open(log_file, 'a') as log:
    stamp = datetime.datetime.now().isoformat(timespec='seconds')
    log.write(f'\n==== {stamp} {run.command_line(program)}\n')
    log.flush()
    try:
      returncode = subprocess.call(run.command(program), stdout=log, stderr=subprocess.STDOUT,
                                   cwd=checkout or str(cells_lib.REPO_ROOT),
                                   env=_environment(threads, checkout),
                                   preexec_fn=_killed_with_parent() if die_with_parent
                                   else None)
    except OSError as e:  # The program itself could not be started.
      log.write(f'could not start {program}: {e}\n')
      returncode = -1
  seconds = time.time() - started
  if returncode == 0 and run_state(run.model_dir) == FINISHED:
    return Outcome(run, SUCCEEDED, returncode, seconds)
  return Outcome(run, FAILED, returncode, seconds, tail(log_file))


def run_plan(runs: Sequence[plan_lib.Run], root: str,
             program: Sequence[str] = plan_lib.TRAIN_PROGRAM,
             report: Callable[[str], None] = print, workers: int = 1,
             archive: Optional[str] = None,
             checkout: Optional[str] = None) -> List[Outcome]:
  """Runs every run, `workers` at a time, in plan order (from `checkout`, see run_one);
  reports each outcome with `report`, logs it under root and archives each run that
  finishes into `archive` (if given). Returns the outcomes in plan order.
  """
  if workers < 1:
    raise ValueError(f'workers must be at least 1, got {workers}')
  threads = threads_per_run(workers)
  lock = threading.Lock()
  # Set once a finished run's record could not be kept for an unforeseen reason (a bug; an
  # archive that refuses it is one line in the outcome, record_error): no further run
  # starts, since the sweep would train runs whose records are lost (the error is raised as
  # the plan ends).
  record_lost = threading.Event()

  def run_and_report(index: int, run: plan_lib.Run) -> Outcome:
    prefix = report_prefix(index, len(runs), run)
    if record_lost.is_set():
      raise RecordError(f'{prefix}: not started, an earlier run\'s record could not be kept')
    state = run_state(run.model_dir)
    if state != FINISHED:
      verb = 'resuming' if state == PARTIAL else 'starting'
      with lock:
        report(f'{prefix}: {verb} (log: {log_path(run)})')
    # Each run from the thread that waits for it: killed with the sweep (kill -9, SIGTERM),
    # never training on alone beside the rerun.
    outcome = run_one(run, program, threads, die_with_parent=True, checkout=checkout)
    with lock:
      report(describe(prefix, outcome))
      try:
        outcome = keep_record(root, outcome, archive)
        if outcome.record_error:
          report(f'{prefix}: {outcome.record_error}')
      except Exception as e:  # pylint: disable=broad-except
        record_lost.set()
        report(f'{prefix}: its record could not be kept ({type(e).__name__}: {e}); no '
               'further run starts')
        raise RecordError(f'{prefix}: its record could not be kept: {e}') from e
    fault_injection.reach('sweep_run_kept')  # Between two runs (a test's barrier).
    return outcome

  if workers == 1:
    return [run_and_report(index, run) for index, run in enumerate(runs, start=1)]
  with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
    futures = [pool.submit(run_and_report, index, run)
               for index, run in enumerate(runs, start=1)]
    return [future.result() for future in futures]


class RecordError(RuntimeError):
  """A finished run's record (sweep log, archive) could not be written."""


def report_prefix(index: int, total: int, run: plan_lib.Run) -> str:
  """'[3/8] <cell> seed 1': how a report line names run `index` of `total`."""
  return f'[{index}/{total}] {run.name}'


def log_path(run: plan_lib.Run) -> str:
  return os.path.join(run.model_dir, LOG_FILE)


def describe(prefix: str, outcome: Outcome) -> str:
  """The report line(s) of one outcome, after `prefix` (e.g. '[3/8] <cell> seed 1')."""
  if outcome.status == SKIPPED:
    return f'{prefix}: already finished, skipped'
  if outcome.status == SUCCEEDED:
    return f'{prefix}: finished in {outcome.seconds:.0f} s'
  status = '' if outcome.returncode is None else f' (exit status {outcome.returncode})'
  if killed_by(outcome.returncode):
    status = f' ({killed_by(outcome.returncode)})'
  return (f'{prefix}: FAILED{status} after {outcome.seconds:.0f} s; the end of its '
          f'log:\n{outcome.log_tail}')


def keep_record(root: str, outcome: Outcome, archive: Optional[str] = None) -> Outcome:
  """Writes the manifest of a run that finished and copies its record into `archive` (if
  given), then appends a trained or failed run's outcome to <root>/sweep_log.jsonl. Returns
  the outcome, with record_error where the archive could not keep the record (an OSError,
  a UserError: the other runs go on)."""
  if outcome.status == SKIPPED:
    return outcome
  run = outcome.run
  if outcome.status == SUCCEEDED:
    archive_lib.write_root_manifest(run)
    if archive:
      try:
        archive_lib.save(run, archive)
      except (OSError, errors.UserError) as e:
        outcome = dataclasses.replace(outcome, record_error=record_error_line(archive, e))
  entry = {'cell': run.cell.id, 'seed': run.seed, 'model_dir': run.model_dir,
           'status': outcome.status, 'returncode': outcome.returncode,
           'seconds': round(outcome.seconds, 1),
           'finished_at': datetime.datetime.now().isoformat(timespec='seconds')}
  if outcome.record_error:
    entry['record_error'] = outcome.record_error
  _append_jsonl(os.path.join(root, SWEEP_LOG_FILE), entry)
  return outcome


def record_error_line(archive: str, e: Exception) -> str:
  """Why the archive could not keep a finished run's record, in one line."""
  if isinstance(e, errors.UserError):
    cause = errors.message_of(e)
  elif isinstance(e, OSError) and e.strerror:
    # The file named where it is the archive's (a copy's error may name its source).
    inside = e.filename and os.path.abspath(str(e.filename)).startswith(
        os.path.abspath(archive) + os.sep)
    cause = f'{e.strerror}: {e.filename}' if inside else e.strerror
  else:
    cause = f'{type(e).__name__}: {e}'
  return (f'its record could not be kept in the archive {archive} ({cause}); it stays in '
          'the root only: make the archive writable, or free space on its disk, then rerun '
          'the same command to archive it')


def killed_by(returncode: Optional[int]) -> Optional[str]:
  """'killed by signal 9 (SIGKILL)' for a subprocess's negative exit status, else None."""
  if returncode is None or returncode >= 0:
    return None
  try:
    name = f' ({signal.Signals(-returncode).name})'
  except ValueError:
    name = ''
  return f'killed by signal {-returncode}{name}'


def reason(outcome: Outcome) -> str:
  """Why a run failed, in one line: killed by a signal, else last_error_line of its log."""
  return killed_by(outcome.returncode) or last_error_line(outcome.log_tail)


def last_error_line(log_tail: str) -> str:
  """The line of a log's end that says what went wrong: the last 'error: ...' line (the
  one-line user errors of the bin/ programs), else the last non-empty line."""
  lines = [line.strip() for line in log_tail.splitlines() if line.strip()]
  for line in reversed(lines):
    if line.lower().startswith('error'):
      return line
  return lines[-1] if lines else '(no output)'


def summary(outcomes: Sequence[Outcome]) -> str:
  """Counts, then each failed run with its last error line and where its log is."""
  counts = {s: sum(o.status == s for o in outcomes) for s in (SUCCEEDED, SKIPPED, FAILED)}
  line = (f'{len(outcomes)} run(s): {counts[SUCCEEDED]} trained, {counts[SKIPPED]} already '
          f'finished, {counts[FAILED]} failed')
  failed = [o for o in outcomes if o.status == FAILED]
  if failed:
    line += '\nfailed: ' + ', '.join(o.run.name for o in failed)
    for o in failed:
      status = '' if o.returncode is None else f'exit status {o.returncode}; '
      line += f'\n  {o.run.name}: {reason(o)} ({status}log: {log_path(o.run)})'
  for o in outcomes:
    if o.record_error:
      line += f'\n{o.run.name}: {o.record_error}'
  return line


class Progress:
  """Counts of a sweep's runs, and the line 'done d / running r / failed f / left l, ETA'.

  The ETA is the mean wall time of the runs trained so far × the runs left (running ones
  included) / the runs that can train at once.
  """

  def __init__(self, total: int, slots: int = 1):
    self.total = total
    self.slots = max(1, slots)
    self.done = self.failed = 0
    self.running = set()
    self._seconds = []

  def started(self, name: str):
    self.running.add(name)

  def finished(self, outcome: Outcome):
    self.running.discard(outcome.run.name)
    if outcome.status == FAILED:
      self.failed += 1
    else:
      self.done += 1
    if outcome.status == SUCCEEDED:
      self._seconds.append(outcome.seconds)

  @property
  def left(self) -> int:
    return self.total - self.done - self.failed

  def eta_seconds(self) -> Optional[float]:
    if not self._seconds:
      return None
    return sum(self._seconds) / len(self._seconds) * self.left / self.slots

  def line(self) -> str:
    eta = self.eta_seconds()
    if not self.left:
      eta_text = 'ETA 0 s'
    elif eta is None:
      eta_text = 'ETA after the first run'
    else:
      eta_text = f'ETA {_duration(eta)}'
    return (f'done {self.done} / running {len(self.running)} / failed {self.failed} / '
            f'left {self.left}, {eta_text}')


def _duration(seconds: float) -> str:
  seconds = int(round(seconds))
  if seconds < 120:
    return f'{seconds} s'
  if seconds < 7200:
    return f'{seconds // 60} min'
  return f'{seconds // 3600} h {seconds % 3600 // 60:02d} min'
