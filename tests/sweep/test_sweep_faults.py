"""The fault campaign at the sweep level: the real bin/sweep and bin/train on a tiny sweep (one
cell x two seeds, a few steps), each fault hit at an exact instant through the fault-injection
points (tf_ipmssl/fault_injection.py: a process paused at a point, then the fault), then ONE
rerun of the same command, after which the root and the archive equal an undisturbed sweep's:
every checkpoint variable by variable, metrics.json (wall times aside), every record file of
both copies, every evaluation scalar and the tables. No output has a traceback, and a run that
had finished before the fault is not trained again."""
import csv
import difflib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.reliability import checks
from tests.training import runs
from tf_ipmssl.run_dir import event_files
from tf_ipmssl.sweep import archive as archive_lib

pytestmark = pytest.mark.integration

SWEEP = str(runs.REPO_ROOT / 'bin' / 'sweep')
CELL = 'table2/cifar10_fisher_f'
SEEDS = (0, 1)
# Checkpoints at steps 2, 4, 6 (all kept), evaluations at 3 and 6; 31 validation and test
# images, so that the errors (k / 31) are compared exactly on rates float32 cannot hold.
OVERRIDES = {'train.steps': 6, 'train.checkpoint_every': 2, 'train.eval_every': 3,
             'train.log_every': 1, 'train.sample_every': 3, 'train.keep_checkpoints': 3,
             'train.deterministic_ops': True, 'build_ssl_data.validation_size': 31}
# metrics.json's wall times (of the sessions that trained): not results.
WALL_TIME_METRICS = ('wall_seconds', 'wall_seconds_this_session', 'wall_split',
                     'wall_split_this_session')
# versions.json's start time, the sessions that resumed the run (a resumed run has them) and
# the checkout's commit (it moves while the sweep runs, as others commit).
SESSION_VERSIONS = ('started', 'resumes', 'source')
# runs.csv's wall-time columns.
WALL_TIME_COLUMNS = ('wall_seconds', 'startup_seconds', 'training_seconds',
                     'evaluation_seconds', 'checkpoints_seconds', 'export_seconds',
                     'teardown_seconds')
SESSION_LINE = '==== '  # How runner.run_one starts each session's part of train.log.


# --- the sweep and its processes

@pytest.fixture(scope='module')
def bindings(tmp_path_factory):
  data_dir = runs.make_data(tmp_path_factory.mktemp('data'), num_test=31)
  return runs.tiny_bindings(data_dir, **OVERRIDES)


def _command(directory, bindings):
  """bin/sweep over the tiny sweep with root directory/root and archive directory/archive."""
  return ([sys.executable, SWEEP, f'--cells={CELL}', f'--seeds={len(SEEDS)}',
           f'--root={directory}/root', f'--archive={directory}/archive', '--workers=1',
           '--noplots', '--gin_file=gin/presets/cpu_quick.gin']
          + [f'--gin_bindings={b}' for b in bindings])


def _default_sigint():
  """The child's SIGINT as a terminal's (a suite started from a background job ignores it)."""
  signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(command, fault=None, prefix=()):
  """bin/sweep in a process group of its own (`fault`: its TF_IPMSSL_FAULT, which its
  trainers inherit); `prefix`: a command it runs under (unshare ...)."""
  return subprocess.Popen([*prefix, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=runs.environment(fault), cwd=str(runs.REPO_ROOT),
                          start_new_session=True, preexec_fn=_default_sigint)


def _finish(process, timeout=600):
  try:
    out, err = process.communicate(timeout=timeout)
  finally:
    if process.poll() is None:
      os.killpg(process.pid, signal.SIGKILL)
      process.communicate()
  return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _sweep(command, fault=None, prefix=()):
  return _finish(_start(command, fault, prefix))


def _paused(process, pause_dir, point, timeout=300):
  """Waits until a process of the sweep is paused at `point` (fault_injection's barrier);
  returns its PID."""
  reached = os.path.join(pause_dir, f'{point}.reached')
  deadline = time.time() + timeout
  while not os.path.exists(reached):
    if process.poll() is not None or time.time() > deadline:
      result = _finish(process)
      raise AssertionError(f'{point} not reached: {result.stdout}\n{result.stderr}')
    time.sleep(0.05)
  while True:  # Written after it is created: wait for its content.
    with open(reached) as f:
      text = f.read()
    if text:
      return int(text)
    time.sleep(0.01)


def _go_on(pause_dir, point):
  open(os.path.join(pause_dir, f'{point}.continue'), 'w').close()


def _processes_naming(text):
  """PIDs of the live processes whose command line contains `text` (this one aside)."""
  found = []
  for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == os.getpid():
      continue
    try:
      with open(f'/proc/{name}/cmdline', 'rb') as f:
        command = f.read().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
      continue
    if text in command:
      found.append(int(name))
  return found


def _gone(pid, timeout=30):
  deadline = time.time() + timeout
  while time.time() < deadline:
    try:
      os.kill(pid, 0)
    except ProcessLookupError:
      return True
    try:  # A zombie is dead.
      with open(f'/proc/{pid}/stat') as f:
        if f.read().rsplit(')', 1)[1].split()[0] == 'Z':
          return True
    except OSError:
      return True
    time.sleep(0.05)
  return False


# --- what is compared

def _run_dirs(directory):
  return {seed: os.path.join(directory, *CELL.split('/'), f'seed_{seed}') for seed in SEEDS}


def _normalized(text, paths):
  for path, mark in paths:
    text = text.replace(str(path), mark)
  return text


def _record_file(run_dir, name, paths):
  """A record file's content as compared: JSON without wall and session times, paths of the
  sweep as marks; the evaluation file by its scalars (its bytes hold wall times)."""
  path = os.path.join(run_dir, *name.split('/'))
  if name.startswith('eval/'):
    return 'an evaluation file'  # Its scalars are compared below.
  with open(path) as f:
    text = _normalized(f.read(), paths)
  if name == archive_lib.MANIFEST_FILE:  # Hashes of files holding wall times: the names.
    return sorted({_key_name(n) for n in json.loads(text)['files']})
  if not name.endswith('.json'):
    return text
  content = json.loads(text)
  if isinstance(content, dict):
    for key in WALL_TIME_METRICS + SESSION_VERSIONS:
      content.pop(key, None)
  return json.dumps(content, sort_keys=True)


def _key_name(name):
  return 'eval/<events file>' if name.startswith('eval/') else name


def _checkpoints(run_dir, out, key):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for folder in ('checkpoints', 'best'):
    state = tf.train.get_checkpoint_state(os.path.join(run_dir, folder))
    names = [os.path.basename(p) for p in state.all_model_checkpoint_paths] if state else []
    out[f'{key}/{folder}/list'] = names
    for name in names:
      for variable, value in runs.checkpoint_values(
          os.path.join(run_dir, folder, name)).items():
        out[f'{key}/{folder}/{name}/{variable}'] = value


def _table(path, paths):
  with open(path) as f:
    text = _normalized(f.read(), paths)
  if os.path.basename(path) != 'runs.csv':
    return text
  rows = list(csv.DictReader(io.StringIO(text)))
  return [{k: v for k, v in row.items() if k not in WALL_TIME_COLUMNS} for row in rows]


def signature(directory, restored=(), other_roots=()):
  """Everything a sweep under `directory` (root/, archive/) is compared on. `restored`: seeds
  whose root copy was restored from the archive (a record: no checkpoints, as by design);
  `other_roots`: roots the sweep's files may name (a copy's) read as its own."""
  root, store = os.path.join(directory, 'root'), os.path.join(directory, 'archive')
  paths = [(root, '<root>')] + [(other, '<root>') for other in other_roots] + [
      (store, '<archive>')]
  out = {}
  for where, base in (('root', root), ('archive', store)):
    for seed, run_dir in _run_dirs(base).items():
      key = f'{where}/seed_{seed}'
      assert archive_lib.check(run_dir) == archive_lib.Check(archive_lib.WHOLE), run_dir
      names = archive_lib.record_files(run_dir) + [archive_lib.MANIFEST_FILE]
      # Each bin/train session writes an evaluation file of its own (a resumed run has
      # several): their scalars are compared, not their number.
      out[f'{key}/record files'] = sorted({_key_name(n) for n in names})
      for name in names:
        out[f'{key}/{_key_name(name)}'] = _record_file(run_dir, name, paths)
      for tag, points in event_files.read_eval_curves(run_dir).items():
        for step, value in points.items():
          out[f'{key}/eval/{tag}@{step}'] = value
      if where == 'root' and seed not in restored:
        _checkpoints(run_dir, out, key)
  tables = os.path.join(root, 'tables')
  out['tables'] = sorted(os.listdir(tables))
  for name in out['tables']:
    out[f'tables/{name}'] = _table(os.path.join(tables, name), paths)
  return out


def _lines(value):
  if isinstance(value, str):
    try:
      value = json.loads(value)
    except ValueError:
      return value.splitlines()
  return json.dumps(value, indent=1, sort_keys=True).splitlines()


def assert_equal(reference, actual):
  differences = []
  for key in sorted(set(reference) | set(actual)):
    if key not in actual or key not in reference:
      differences.append(f'{key} {"missing" if key not in actual else "extra"}')
      continue
    a, b = reference[key], actual[key]
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
      if not (np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True)):
        differences.append(key)  # NaN equals NaN (the errors not evaluated yet).
    elif a != b:
      differences.append(f'{key}: ' + '\n'.join(difflib.unified_diff(
          _lines(a), _lines(b), 'reference', 'after the fault', lineterm='', n=0)))
  assert not differences, '\n'.join(differences)


def sessions(directory, seed):
  """The bin/train sessions of a run (train.log's parts, one per start by the sweep)."""
  with open(os.path.join(_run_dirs(os.path.join(directory, 'root'))[seed], 'train.log')) as f:
    return f.read().count('\n' + SESSION_LINE)


def assert_no_traceback(directory, *results):
  for result in results:
    assert 'Traceback' not in result.stdout + result.stderr, result.stdout + result.stderr
  for run_dir in _run_dirs(os.path.join(directory, 'root')).values():
    log = os.path.join(run_dir, 'train.log')
    if os.path.exists(log):
      with open(log) as f:
        text = f.read()
      assert 'Traceback' not in text, text


def _summary(result, trained, finished, failed):
  return (f'{len(SEEDS)} run(s): {trained} trained, {finished} already finished, {failed} '
          'failed') in result.stdout


# --- the undisturbed sweep

@pytest.fixture(scope='module')
def reference(bindings, tmp_path_factory):
  """(directory, signature) of the undisturbed sweep."""
  directory = str(tmp_path_factory.mktemp('reference'))
  result = _sweep(_command(directory, bindings))
  assert result.returncode == 0, result.stdout + result.stderr
  assert _summary(result, 2, 0, 0), result.stdout
  assert_no_traceback(directory, result)
  return directory, signature(directory)


def _rerun_equals_reference(directory, bindings, reference, trained, finished, restored=()):
  """ONE rerun of the same command: exit 0, `trained` runs trained and `finished` skipped,
  no traceback; the root and archive equal the reference's. Returns the rerun's result."""
  result = _sweep(_command(directory, bindings))
  assert result.returncode == 0, result.stdout + result.stderr
  assert _summary(result, trained, finished, 0), result.stdout
  expected = {key: value for key, value in reference[1].items()
              if not key.startswith(tuple(f'root/seed_{seed}/{folder}/' for seed in restored
                                          for folder in ('checkpoints', 'best')))}
  assert_equal(expected, signature(directory, restored))
  return result


# --- the faults

def test_kill_9_of_the_driver_kills_its_paused_trainer_and_the_rerun_equals(
    bindings, reference, tmp_path):
  """kill -9 of bin/sweep while its trainer is paused after its second checkpoint: the
  trainer dies with it (no process of the sweep is left); the rerun resumes it."""
  directory, pause_dir = str(tmp_path), str(tmp_path)
  command = _command(directory, bindings)
  sweep = _start(command, fault=f'checkpoint_written#2=pause:{pause_dir}')
  trainer = _paused(sweep, pause_dir, 'checkpoint_written')
  os.kill(sweep.pid, signal.SIGKILL)
  killed = _finish(sweep)
  assert killed.returncode == -signal.SIGKILL
  assert _gone(trainer), f'the trainer (PID {trainer}) outlived its sweep'
  root = os.path.join(directory, 'root')
  deadline = time.time() + 30
  while _processes_naming(root) and time.time() < deadline:
    time.sleep(0.05)
  assert not _processes_naming(root), 'a process started by the killed sweep is alive'
  rerun = _rerun_equals_reference(directory, bindings, reference, trained=2, finished=0)
  assert_no_traceback(directory, killed, rerun)
  assert (f'Took over the lock {root}/.sweep_lock of a bin/sweep that is no longer running '
          f'(PID {sweep.pid} ') in rerun.stdout, rerun.stdout
  assert f'[1/2] {CELL} seed 0: resuming' in rerun.stdout
  assert f'Resuming from {_run_dirs(root)[0]}/checkpoints/ckpt-4 (step 4)' in open(
      os.path.join(_run_dirs(root)[0], 'train.log')).read()


def test_kill_9_of_a_trainer_is_named_in_the_summary_and_the_rerun_equals(
    bindings, reference, tmp_path):
  """kill -9 of the first trainer (paused after its second checkpoint): the sweep goes on
  with the second run, its summary says 'killed by signal 9 (SIGKILL)', exit 1; the rerun
  resumes the first and does not train the second again."""
  directory, pause_dir = str(tmp_path), str(tmp_path)
  sweep = _start(_command(directory, bindings),
                 fault=f'checkpoint_written#2=pause:{pause_dir}')
  trainer = _paused(sweep, pause_dir, 'checkpoint_written')
  os.kill(trainer, signal.SIGKILL)
  assert _gone(trainer)
  _go_on(pause_dir, 'checkpoint_written')  # The second trainer passes the point.
  result = _finish(sweep)
  assert result.returncode == 1, result.stdout + result.stderr
  assert _summary(result, 1, 0, 1), result.stdout
  model_dir = _run_dirs(os.path.join(directory, 'root'))[0]
  assert (f'  {CELL} seed 0: killed by signal 9 (SIGKILL) (exit status -9; log: '
          f'{model_dir}/train.log)') in result.stdout.splitlines(), result.stdout
  rerun = _rerun_equals_reference(directory, bindings, reference, trained=1, finished=1)
  assert_no_traceback(directory, result, rerun)
  assert sessions(directory, 0) == 2 and sessions(directory, 1) == 1


@pytest.mark.parametrize('signum, line, returncode', [
    (signal.SIGTERM, 'error: the sweep was stopped (SIGTERM) and its runs in progress with it; '
                     'rerun the same command to resume them', 128 + signal.SIGTERM),
    (signal.SIGINT, 'error: interrupted; rerun the same command to resume', 130),
], ids=['SIGTERM', 'SIGINT'])
def test_a_signal_to_the_sweeps_process_group_is_one_line_and_the_rerun_equals(
    bindings, reference, tmp_path, signum, line, returncode):
  """SIGTERM or SIGINT (Ctrl-C) to the process group of bin/sweep and its trainer (paused
  after its second checkpoint): one line, no traceback, no process of the sweep left; the
  rerun resumes."""
  directory, pause_dir = str(tmp_path), str(tmp_path)
  sweep = _start(_command(directory, bindings),
                 fault=f'checkpoint_written#2=pause:{pause_dir}')
  trainer = _paused(sweep, pause_dir, 'checkpoint_written')
  os.killpg(sweep.pid, signum)
  result = _finish(sweep)
  assert result.returncode == returncode, result.stdout + result.stderr
  assert result.stderr.strip().splitlines()[-1] == line, result.stderr
  checks.one_error_line(result.stderr)
  assert _gone(trainer), f'the trainer (PID {trainer}) outlived its sweep'
  assert not os.path.exists(os.path.join(directory, 'root', '.sweep_lock'))
  rerun = _rerun_equals_reference(directory, bindings, reference, trained=2, finished=0)
  assert_no_traceback(directory, result, rerun)


def test_the_root_deleted_between_runs_is_restored_from_the_archive(
    bindings, reference, tmp_path):
  """The whole root deleted after the first run was archived, before the second started:
  the sweep trains the second in a new root; the rerun restores the first from the archive
  (its record; checkpoints are not archived) without training it again."""
  directory, pause_dir = str(tmp_path), str(tmp_path)
  sweep = _start(_command(directory, bindings), fault=f'sweep_run_kept#1=pause:{pause_dir}')
  assert _paused(sweep, pause_dir, 'sweep_run_kept') == sweep.pid
  root = os.path.join(directory, 'root')
  shutil.rmtree(root)
  _go_on(pause_dir, 'sweep_run_kept')
  result = _finish(sweep)
  assert result.returncode == 0, result.stdout + result.stderr
  assert _summary(result, 2, 0, 0), result.stdout
  assert not os.path.exists(_run_dirs(root)[0])
  rerun = _rerun_equals_reference(directory, bindings, reference, trained=0, finished=2,
                                  restored=(0,))
  assert (f'Archive {directory}/archive: 0 finished run(s) archived, 1 restored into the '
          'root') in rerun.stdout
  assert_no_traceback(directory, result, rerun)
  assert not os.path.exists(os.path.join(_run_dirs(root)[0], 'train.log'))  # Not trained.
  assert sessions(directory, 1) == 1


@checks.needs_mount
@pytest.mark.parametrize('disk', ['read-only', 'full'])
def test_a_read_only_or_full_archive_is_one_line_and_the_rerun_archives(
    bindings, reference, tmp_path, disk):
  """The archive on a read-only mount, or on a 4 KiB tmpfs that fills with the first record
  file (its own mount namespace: chmod does not stop root, and the namespace's end frees
  the disk): each run trains, its record the archive cannot keep is one line in the report
  and the summary, exit 1; the rerun with the archive writable archives both without
  training."""
  directory = str(tmp_path)
  store = os.path.join(directory, 'archive')
  os.makedirs(store)
  quoted = shlex.quote(store)
  setup = (f'mount --bind {quoted} {quoted} && mount -o remount,bind,ro {quoted}'
           if disk == 'read-only' else f'mount -t tmpfs -o size=4k tmpfs {quoted}')
  cause = {'read-only': 'Read-only file system: ', 'full': 'No space left on device'}[disk]
  result = _sweep(_command(directory, bindings),
                  prefix=('unshare', '-m', 'sh', '-c', f'{setup} && exec "$0" "$@"'))
  assert result.returncode == 1, result.stdout + result.stderr
  assert _summary(result, 2, 0, 0), result.stdout
  for seed in SEEDS:
    lines = [l for l in result.stdout.splitlines()
             if l.startswith(f'{CELL} seed {seed}: its record could not be kept in the '
                             f'archive {store} ({cause}')]
    assert len(lines) == 1, result.stdout  # In the summary; and as the run ended:
    assert f'[{seed + 1}/2] {lines[0]}' in result.stdout.splitlines()
  assert '| Ω_F(f) |' in result.stdout  # The tables are written.
  rerun = _rerun_equals_reference(directory, bindings, reference, trained=0, finished=2)
  assert f'Archive {store}: 2 finished run(s) archived, 0 restored' in rerun.stdout
  assert_no_traceback(directory, result, rerun)
  assert sessions(directory, 0) == sessions(directory, 1) == 1


def _events_file(run_dir):
  (name,) = os.listdir(os.path.join(run_dir, 'eval'))
  return os.path.join(run_dir, 'eval', name)


@pytest.mark.parametrize('how', ['truncated', 'flipped', 'deleted'])
def test_damaged_records_in_root_and_archive_are_repaired_not_retrained(
    bindings, reference, tmp_path, how):
  """A copy of the finished sweep with metrics.json and the evaluation file damaged in the
  root's copy of seed 0 and in the archive's copy of seed 1: the rerun repairs each damaged
  copy from the other, whole one, one line per file, and trains nothing."""
  directory = str(tmp_path)
  for name in ('root', 'archive'):
    shutil.copytree(os.path.join(reference[0], name), os.path.join(directory, name))
  damaged = {_run_dirs(os.path.join(directory, 'root'))[0]: 'archive',
             _run_dirs(os.path.join(directory, 'archive'))[1]: 'root'}
  paths = {run_dir: (os.path.join(run_dir, 'metrics.json'), _events_file(run_dir))
           for run_dir in damaged}
  for run_dir in damaged:
    for path in paths[run_dir]:
      checks.damage(path, how)
  result = _sweep(_command(directory, bindings))
  assert result.returncode == 0, result.stdout + result.stderr
  assert _summary(result, 0, 2, 0), result.stdout
  repaired = [line for line in result.stdout.splitlines() if line.startswith('Repaired ')]
  assert sorted(repaired) == sorted(
      f"Repaired {path} from the {other}'s copy" for run_dir, other in damaged.items()
      for path in paths[run_dir]), result.stdout
  assert_equal(reference[1], signature(directory, other_roots=[
      os.path.join(reference[0], 'root')]))
  assert_no_traceback(directory, result)
  assert sessions(directory, 0) == sessions(directory, 1) == 1


def _newest_checkpoint_files(run_dir):
  directory = os.path.join(run_dir, 'checkpoints')
  return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                if n.startswith('ckpt-4.'))


def test_a_lost_or_damaged_newest_checkpoint_resumes_from_the_newest_intact_one(
    bindings, reference, tmp_path):
  """Each trainer killed (kill -9) right after its checkpoint of step 4; then seed 0's
  ckpt-4 deleted, seed 1's data cut short. The rerun resumes each from ckpt-2, saying so in
  one line naming ckpt-4, and equals the undisturbed sweep."""
  directory = str(tmp_path)
  result = _sweep(_command(directory, bindings), fault='checkpoint_written#2=kill')
  assert result.returncode == 1, result.stdout + result.stderr
  assert _summary(result, 0, 0, 2), result.stdout
  assert result.stdout.count('killed by signal 9 (SIGKILL)') == 4  # Reported, summarized.
  root = _run_dirs(os.path.join(directory, 'root'))
  for path in _newest_checkpoint_files(root[0]):
    os.remove(path)
  (data,) = [p for p in _newest_checkpoint_files(root[1]) if '.data' in p]
  with open(data, 'r+b') as f:
    f.truncate(f.seek(0, os.SEEK_END) // 2)
  rerun = _rerun_equals_reference(directory, bindings, reference, trained=2, finished=0)
  for seed, skipped in ((0, 'is missing (none of its files is left); left it out of the '
                            'checkpoint list'), (1, 'is damaged (')):
    with open(os.path.join(root[seed], 'train.log')) as f:
      last_session = f.read().split('\n' + SESSION_LINE)[-1]
    checkpoints = os.path.join(root[seed], 'checkpoints')
    lines = [l for l in last_session.splitlines() if 'ckpt-4' in l and 'checkpoint ' in l]
    assert len(lines) == 1 and lines[0].startswith(
        f'checkpoint {checkpoints}/ckpt-4 {skipped}'), last_session
    assert f'Resuming from {checkpoints}/ckpt-2 (step 2)' in last_session, last_session
  assert_no_traceback(directory, result, rerun)
