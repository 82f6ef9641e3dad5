"""Runs a sweep's plan on a Ray cluster: one Ray task per run (cell × seed).

Each task requests `cpus_per_run` CPUs and `gpus_per_run` GPUs, so Ray's resources decide
how many runs train at once and where. A task calls the local runner's `run_one`: the same
bin/train command, run from the repository checkout, in the same model dir
(`<root>/<cell id>/seed_<s>`, absolute), with its output appended to `<model_dir>/train.log`.
Every node must therefore see the checkout and the sweep root at the same paths (a shared
filesystem). The same rules as the local runner hold:

- A finished run is skipped (no task); any other run is (re)started and bin/train resumes
  from its latest checkpoint; a model dir whose configuration differs is refused by
  bin/train, which fails that run only.
- Retries, up to `max_retries` per run: Ray retries a task whose worker process or node
  died, and this module has Ray retry a run whose bin/train was killed by a signal or
  terminated (SIGTERM, exit status 143: preemption). Each retry resumes from the run's
  latest checkpoint. A run that fails on its own (bin/train exits with an error: a bad
  binding, a refused model dir, a divergence) is not retried: it would fail the same way.
  It is reported and the other runs go on.
- The trainer is killed with its Ray worker (Linux parent-death signal), so that it never
  races the retry on the same model dir. A retry that lands on another host takes over the
  trainer lock (`train.lock`) that the dead attempt left behind on the first host.

Each attempt writes `<model_dir>/ray_attempt.json` (sweep token, attempt number, host and
worker PID); the driver reads it to report where a run started and its retries. Outcomes
go to `<root>/sweep_log.jsonl` as with the local runner. `ray` is imported only here.
"""
import dataclasses
import os
import socket
import time
import uuid
from typing import Callable, Dict, List, Optional, Sequence

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import run_lock
from tf_ipmssl.sweep import plan as plan_lib
from tf_ipmssl.sweep import runner

ATTEMPT_FILE = 'ray_attempt.json'
# bin/train's exit status after SIGTERM (it checkpoints and exits): a preempted run.
TERMINATED_STATUS = 143
# How often the driver looks at the runs and, every PROGRESS_SECONDS, prints the counts.
POLL_SECONDS = 5.0
PROGRESS_SECONDS = 60.0


class RunInterrupted(Exception):
  """bin/train was killed by a signal or terminated: Ray retries the task."""


def import_ray():
  """The ray module, or a ConfigError saying how to install it."""
  try:
    import ray  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise errors.ConfigError(
        "--backend=ray needs Ray, which is not installed: pip install -e '.[ray]' "
        '(from the repository checkout)') from None
  return ray


def _interrupted(returncode: Optional[int]) -> bool:
  """Whether an exit status means killed (signal) or terminated, rather than failed.

  run_one reports -1 when the program could not be started: that is a failure.
  """
  return returncode is not None and (returncode < -1 or returncode == TERMINATED_STATUS)


def _release_lock_of_dead_attempt(model_dir: str, previous: dict):
  """Removes train.lock when the dead previous attempt's trainer on another host holds it.

  Ray starts a retry only once the previous attempt's worker or node is gone, and the
  trainer died with its worker; bin/train itself cannot check a PID on another host.
  """
  holder = run_files.read_json(model_dir, run_lock.LOCK_FILE, unreadable_ok=True,
                               quiet=True)
  if holder is None or holder.get('host') != previous.get('host'):
    return
  if holder.get('host') == socket.gethostname():  # bin/train sees whether the PID lives.
    return
  lock = os.path.join(model_dir, run_lock.LOCK_FILE)
  os.remove(lock)
  with open(os.path.join(model_dir, runner.LOG_FILE), 'a') as log:
    log.write(f'sweep: removed {lock} of attempt {previous.get("attempt")} on host '
              f'{holder.get("host")} (its Ray worker or node died)\n')


def begin_attempt(model_dir: str, token: str) -> int:
  """Writes this attempt to the model dir (ATTEMPT_FILE); returns its number (1 for the
  first)."""
  os.makedirs(model_dir, exist_ok=True)
  previous = run_files.read_json(model_dir, ATTEMPT_FILE, unreadable_ok=True)
  attempt = 1
  if previous is not None and previous.get('token') == token:
    attempt = int(previous.get('attempt', 0)) + 1
    _release_lock_of_dead_attempt(model_dir, previous)
  run_files.write_json(model_dir, ATTEMPT_FILE, {
      'token': token, 'attempt': attempt, 'host': socket.gethostname(), 'pid': os.getpid(),
      'started': time.time()})
  return attempt


def train_task(run: plan_lib.Run, token: str, program: Optional[Sequence[str]],
               threads: Optional[int]) -> runner.Outcome:
  """The body of one run's Ray task: trains or resumes it; raises RunInterrupted when the
  trainer was killed or terminated, so that Ray retries it.

  `program` None: bin/train under the Python that runs the Ray worker on its node.
  """
  begin_attempt(run.model_dir, token)
  program = plan_lib.TRAIN_PROGRAM if program is None else program
  outcome = runner.run_one(run, program, threads, die_with_parent=True)
  if outcome.status == runner.FAILED and _interrupted(outcome.returncode):
    raise RunInterrupted(f'{run.name}: bin/train exited with status {outcome.returncode} '
                         f'(killed or terminated); log: {runner.log_path(run)}')
  return outcome


def connect(ray, address: Optional[str]) -> bool:
  """Connects to the cluster at `address` ('auto', 'host:port', 'ray://...'), or starts a
  local Ray for the sweep when None. Returns whether this call connected (and should
  disconnect at the end): not when the process was connected already.

  Workers find this checkout through PYTHONPATH (every node needs it at the same path).
  """
  if ray.is_initialized():
    return False
  runtime_env = {'env_vars': {'PYTHONPATH': str(cells_lib.REPO_ROOT)}}
  kwargs = dict(runtime_env=runtime_env, log_to_driver=False, configure_logging=True,
                logging_level='warning')
  if address is None:
    ray.init(address='local', include_dashboard=False, **kwargs)
    return True
  try:
    ray.init(address=address, **kwargs)
  except (ConnectionError, RuntimeError, ValueError) as e:
    message = errors.first_line(e) or type(e).__name__
    raise errors.ConfigError(f'cannot connect to the Ray cluster at --ray_address={address}: '
                             f'{message}') from None
  return True


def parallel_slots(ray, cpus_per_run: float, gpus_per_run: float) -> int:
  """How many runs the cluster's resources can train at once."""
  resources = ray.cluster_resources()
  slots = []
  if cpus_per_run:
    slots.append(int(resources.get('CPU', 0) // cpus_per_run))
  if gpus_per_run:
    slots.append(int(resources.get('GPU', 0) // gpus_per_run))
  return max(1, min(slots)) if slots else 1


@dataclasses.dataclass
class _Task:
  index: int
  run: plan_lib.Run
  started: float
  attempt: int = 0  # The last attempt seen in the model dir (0: not started yet).


def _failure(ray, task: _Task, error: Exception) -> runner.Outcome:
  """The outcome of a task that raised (retries used up): a FAILED run."""
  cause = getattr(error, 'cause', None) or error
  if isinstance(cause, RunInterrupted):
    what = str(cause)
  elif isinstance(error, (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError)):
    what = f'its Ray worker or node died: {type(error).__name__}'
  else:
    what = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
  tail = runner.tail(runner.log_path(task.run))
  return runner.Outcome(task.run, runner.FAILED, None, time.time() - task.started,
                        (tail + '\n' if tail else '') + f'error: {what} (no retries left)')


def run_plan(runs: Sequence[plan_lib.Run], root: str,
             address: Optional[str] = None, cpus_per_run: float = 1,
             gpus_per_run: float = 0, max_retries: int = 3,
             program: Optional[Sequence[str]] = None,
             report: Callable[[str], None] = print,
             progress_seconds: float = PROGRESS_SECONDS,
             archive: Optional[str] = None) -> List[runner.Outcome]:
  """Runs every run as a Ray task; reports (and archives) as the local runner does, plus a
  progress line (done / running / failed / left, ETA) every `progress_seconds` and at each
  outcome.
  `program`: the trainer command (default: bin/train under each worker's Python). Returns
  the outcomes in plan order.
  """
  if max_retries < 0:
    raise errors.ConfigError(f'--max_retries must be at least 0, got {max_retries}')
  if cpus_per_run <= 0 or gpus_per_run < 0:
    raise errors.ConfigError('--cpus_per_run must be positive and --gpus_per_run at least 0')
  ray = import_ray()
  connected = connect(ray, address)
  try:
    return _run_tasks(ray, runs, root, cpus_per_run, gpus_per_run, max_retries, program,
                      report, progress_seconds, archive)
  finally:
    if connected:
      ray.shutdown()


def _run_tasks(ray, runs, root, cpus_per_run, gpus_per_run, max_retries, program, report,
               progress_seconds, archive):
  """run_plan on a connected Ray."""
  token = uuid.uuid4().hex
  threads = max(1, int(cpus_per_run))
  task_function = ray.remote(train_task).options(
      num_cpus=cpus_per_run, num_gpus=gpus_per_run, max_retries=max_retries,
      retry_exceptions=[RunInterrupted])
  slots = parallel_slots(ray, cpus_per_run, gpus_per_run)
  report(f'Ray: {len(runs)} run(s), {cpus_per_run:g} CPU(s) and {gpus_per_run:g} GPU(s) '
         f'each, up to {slots} at once on {len(ray.nodes())} node(s)')
  progress = runner.Progress(len(runs), slots)
  outcomes: Dict[int, runner.Outcome] = {}
  pending: Dict[object, _Task] = {}

  def prefix(index, run):
    return runner.report_prefix(index, len(runs), run)

  for index, run in enumerate(runs, start=1):
    if runner.run_state(run.model_dir) == runner.FINISHED:
      outcomes[index] = runner.Outcome(run, runner.SKIPPED)
      progress.finished(outcomes[index])
      report(runner.describe(prefix(index, run), outcomes[index]))
      continue
    ref = task_function.remote(run, token, program and tuple(program), threads)
    pending[ref] = _Task(index, run, time.time())

  last_progress = time.time()
  while pending:
    ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_SECONDS)
    for task in pending.values():
      _report_attempt(task, token, progress, report, prefix)
    for ref in ready:
      task = pending.pop(ref)
      try:
        outcome = ray.get(ref)
      except Exception as e:  # pylint: disable=broad-except
        outcome = _failure(ray, task, e)
      outcomes[task.index] = outcome
      progress.finished(outcome)
      report(runner.describe(prefix(task.index, task.run), outcome))
      outcome = runner.keep_record(root, outcome, archive)
      outcomes[task.index] = outcome
      if outcome.record_error:
        report(f'{prefix(task.index, task.run)}: {outcome.record_error}')
    if ready or time.time() - last_progress >= progress_seconds:
      report(progress.line())
      last_progress = time.time()
  return [outcomes[index] for index in range(1, len(runs) + 1)]


def _report_attempt(task, token, progress, report, prefix):
  """Reports a run's attempt that started since the last look (from ray_attempt.json)."""
  attempt = run_files.read_json(task.run.model_dir, ATTEMPT_FILE, unreadable_ok=True)
  if attempt is None or attempt.get('token') != token or attempt.get('attempt', 0) <= task.attempt:
    return
  task.attempt = attempt['attempt']
  progress.started(task.run.name)
  where = f"on {attempt.get('host')} (worker PID {attempt.get('pid')})"
  if task.attempt == 1:
    report(f'{prefix(task.index, task.run)}: running {where} (log: '
           f'{runner.log_path(task.run)})')
  else:
    report(f'{prefix(task.index, task.run)}: retry {task.attempt - 1} {where}, resuming '
           'from its latest checkpoint (the previous attempt was killed or preempted, or its '
           'node died)')
