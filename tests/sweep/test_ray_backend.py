"""bin/sweep --backend=ray on a real two-node Ray cluster started on this machine.

The cluster (`ray start --head` and a second `ray start --address=...`, 1 CPU each) lives
for this module; every process it started is killed at the end, also when a test fails.
The runs are real tiny bin/train runs on fake Fashion-MNIST files.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest
import ray
import tensorflow as tf

from tests import local_server
from tests.training import runs as train_runs
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import run_lock
from tf_ipmssl.sweep import plan as plan_lib
from tf_ipmssl.sweep import ray_backend
from tf_ipmssl.sweep import runner

RAY = os.path.join(os.path.dirname(sys.executable), 'ray')
SWEEP = str(cells_lib.REPO_ROOT / 'bin' / 'sweep')
CELLS = ('table2/cifar10_fisher_f', 'table2/cifar10_fisher_fneg')
STEPS = 8
FAKE_TRAIN = (sys.executable, os.path.join(os.path.dirname(__file__), 'fake_train.py'))


def _processes_of(sessions, marker):
  """PIDs of live processes in one of `sessions` or whose command line holds `marker`."""
  found = []
  for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == os.getpid():
      continue
    pid = int(name)
    try:
      with open(f'/proc/{pid}/cmdline', 'rb') as f:
        cmdline = f.read().decode(errors='replace')
      with open(f'/proc/{pid}/stat') as f:
        state = f.read().rsplit(')', 1)[1].split()[0]
      session = os.getsid(pid)
    except (OSError, ProcessLookupError):
      continue
    if state == 'Z':  # Dead, waiting to be reaped by init.
      continue
    if session in sessions or marker in cmdline:
      found.append(pid)
  return found


def _kill_all(sessions, marker):
  for pid in _processes_of(sessions, marker):
    try:
      os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
  deadline = time.time() + 30
  while time.time() < deadline and _processes_of(sessions, marker):
    time.sleep(0.2)
  return _processes_of(sessions, marker)


@pytest.fixture(scope='module')
def cluster():
  """The address of a two-node Ray cluster (head + one worker node, 1 CPU each).

  Ray's token authentication is off for it (RAY_AUTH_MODE=disabled, for its nodes and this
  module's drivers, whatever ~/.ray holds): this process imported ray before the fixture
  could hand it a token.
  """
  # Ray's unix sockets live under the temp dir: its path must be short.
  temp_dir = tempfile.mkdtemp(prefix='rt', dir='/tmp')
  port = local_server.free_port()
  address = f'127.0.0.1:{port}'
  common = ['--num-cpus=1', '--node-ip-address=127.0.0.1', '--disable-usage-stats',
            '--object-store-memory=80000000']
  sessions = set()
  with pytest.MonkeyPatch.context() as patch:
    patch.setenv('RAY_USAGE_STATS_ENABLED', '0')
    patch.setenv('RAY_AUTH_MODE', 'disabled')
    try:
      for arguments in (['--head', f'--port={port}', f'--temp-dir={temp_dir}',
                         '--include-dashboard=false',
                         f'--ray-client-server-port={local_server.free_port()}'],
                        [f'--address={address}']):
        # Its own session: every Ray process it leaves running can be found and killed.
        process = subprocess.Popen([RAY, 'start', *arguments, *common],
                                   start_new_session=True, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        sessions.add(process.pid)
        output, _ = process.communicate(timeout=180)
        assert process.returncode == 0, output
      ray.init(address=address, logging_level='warning', log_to_driver=False)
      try:
        deadline = time.time() + 60
        while sum(node['Alive'] for node in ray.nodes()) < 2 and time.time() < deadline:
          time.sleep(0.5)
        assert sum(node['Alive'] for node in ray.nodes()) == 2
      finally:
        ray.shutdown()
      yield address
    finally:
      left = _kill_all(sessions, temp_dir)
      subprocess.run(['rm', '-rf', temp_dir], check=False)
      assert not left, f'Ray processes still running: {left}'


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  return train_runs.make_data(tmp_path_factory.mktemp('data'))


def _bindings(data_dir):
  """Tiny runs that keep each cell's constraint; deterministic, so reruns are bit-equal."""
  bindings = train_runs.tiny_bindings(data_dir, **{
      'train.steps': STEPS, 'train.checkpoint_every': 1, 'train.eval_every': 4,
      'train.log_every': 1, 'train.sample_every': STEPS, 'train.deterministic_ops': True,
      'train.export_classifier': False})
  return [b for b in bindings if not b.startswith('ssl.constraints')]


def _sweep(root, data_dir, *flags):
  command = [sys.executable, SWEEP, f'--cells={",".join(CELLS)}', '--seeds=2',
             f'--root={root}', *flags]
  command += [f'--gin_bindings={b}' for b in _bindings(data_dir)]
  return subprocess.run(command, capture_output=True, text=True, timeout=900,
                        cwd=str(cells_lib.REPO_ROOT))


@pytest.fixture(scope='module')
def local_root(tmp_path_factory, data_dir):
  """The tiny sweep trained by the local backend: the reference for the Ray runs."""
  root = str(tmp_path_factory.mktemp('local'))
  result = _sweep(root, data_dir, '--workers=2')
  assert result.returncode == 0, result.stdout + result.stderr
  return root


def _table_files(tables_dir):
  """{file name: bytes} of the tables, runs.csv without its wall-time columns (*_seconds)."""
  files = {}
  for name in sorted(os.listdir(tables_dir)):
    with open(os.path.join(tables_dir, name), 'rb') as f:
      content = f.read()
    if name == 'runs.csv':
      rows = [line.split(',') for line in content.decode().splitlines()]
      timed = {i for i, column in enumerate(rows[0]) if column.endswith('_seconds')}
      content = '\n'.join(','.join(v for i, v in enumerate(row) if i not in timed)
                           for row in rows).encode()
    files[name] = content
  return files


def _final_checkpoint(model_dir):
  return tf.train.latest_checkpoint(os.path.join(model_dir, 'checkpoints'))


@pytest.mark.integration
def test_ray_sweep_writes_the_local_backends_runs_and_tables(cluster, data_dir, local_root,
                                                             tmp_path):
  root = str(tmp_path / 'ray')
  result = _sweep(root, data_dir, '--backend=ray', f'--ray_address={cluster}',
                  '--cpus_per_run=1', '--max_retries=1')
  assert result.returncode == 0, result.stdout + result.stderr
  assert 'up to 2 at once on 2 node(s)' in result.stdout
  assert 'done 4 / running 0 / failed 0 / left 0' in result.stdout
  assert '4 run(s): 4 trained, 0 already finished, 0 failed' in result.stdout

  for cell in CELLS:
    for seed in (0, 1):
      relative = os.path.join(*cell.split('/'), f'seed_{seed}')
      ours, theirs = os.path.join(root, relative), os.path.join(local_root, relative)
      assert runner.run_state(ours) == runner.FINISHED
      assert os.path.isfile(os.path.join(ours, runner.LOG_FILE))
      assert int(_final_checkpoint(ours).rsplit('-', 1)[1]) == STEPS
      with open(os.path.join(ours, 'metrics.json')) as a, \
          open(os.path.join(theirs, 'metrics.json')) as b:
        assert json.load(a)['best'] == json.load(b)['best']
  ray_tables = _table_files(os.path.join(root, 'tables'))
  local_tables = _table_files(os.path.join(local_root, 'tables'))
  assert sorted(ray_tables) == ['class_errors.csv', 'class_errors.md', 'runs.csv',
                                'table2.csv', 'table2.md', 'table2.png', 'tables.md']
  assert ray_tables == local_tables

  # Everything finished: a second pass submits nothing.
  again = _sweep(root, data_dir, '--backend=ray', f'--ray_address={cluster}')
  assert again.returncode == 0, again.stdout + again.stderr
  assert again.stdout.count('already finished, skipped') == 4


def _wait_for(condition, what, timeout=300):
  deadline = time.time() + timeout
  while time.time() < deadline:
    value = condition()
    if value:
      return value
    time.sleep(0.05)
  raise AssertionError(f'timed out waiting for {what}')


def _killer(run, seen):
  """Kills the Ray worker of `run` once it wrote its first checkpoint; notes what it saw."""
  try:
    def first_checkpoint_written():
      checkpoint = (_final_checkpoint(run.model_dir)
                    if os.path.isdir(os.path.join(run.model_dir, 'checkpoints')) else None)
      return checkpoint and int(checkpoint.rsplit('-', 1)[1]) >= 1

    _wait_for(first_checkpoint_written, 'the first checkpoint')
    with open(os.path.join(run.model_dir, ray_backend.ATTEMPT_FILE)) as f:
      seen['attempt'] = json.load(f)
    with open(os.path.join(run.model_dir, run_lock.LOCK_FILE)) as f:
      trainer = json.load(f)['pid']
    seen['finished_before_kill'] = runner.run_state(run.model_dir) == runner.FINISHED
    os.kill(seen['attempt']['pid'], signal.SIGKILL)  # The Ray worker running the task.
    # The trainer dies with its worker: it never races the retry on the model dir.
    _wait_for(lambda: _dead(trainer), 'the trainer to die with its worker', timeout=30)
    seen['killed_at'] = int(_final_checkpoint(run.model_dir).rsplit('-', 1)[1])
  except Exception as e:  # pylint: disable=broad-except
    seen['error'] = e


def _dead(pid):
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().rsplit(')', 1)[1].split()[0] == 'Z'
  except OSError:
    return True


@pytest.mark.integration
def test_killed_worker_is_retried_and_resumes_to_the_uninterrupted_weights(
    cluster, data_dir, local_root, tmp_path):
  cell = cells_lib.get_cell(CELLS[0])
  (run,) = plan_lib.make_plan([cell], (0,), str(tmp_path), (), _bindings(data_dir))
  seen, reports = {}, []
  killer = threading.Thread(target=_killer, args=(run, seen), daemon=True)
  killer.start()
  outcomes = ray_backend.run_plan([run], str(tmp_path), address=cluster, max_retries=2,
                                  report=reports.append)
  killer.join(timeout=60)
  assert 'error' not in seen, seen.get('error')
  assert seen['attempt']['attempt'] == 1
  assert not seen['finished_before_kill']
  assert seen['killed_at'] < STEPS

  (outcome,) = outcomes
  assert outcome.status == runner.SUCCEEDED, outcome.log_tail
  assert any('retry 1' in r for r in reports), reports
  with open(os.path.join(run.model_dir, ray_backend.ATTEMPT_FILE)) as f:
    assert json.load(f)['attempt'] == 2
  with open(os.path.join(run.model_dir, runner.LOG_FILE)) as f:
    assert 'Resuming from' in f.read()

  reference = os.path.join(local_root, *cell.id.split('/'), 'seed_0')
  expected = train_runs.checkpoint_values(_final_checkpoint(reference))
  actual = train_runs.checkpoint_values(_final_checkpoint(run.model_dir))
  assert expected.keys() == actual.keys()
  assert len([k for k in expected if 'critic' in k or 'generator' in k]) > 20
  for name in expected:
    if name.startswith('save_counter'):  # How often a checkpoint was written, not state.
      continue
    np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


@pytest.mark.integration
def test_failing_runs_are_reported_and_the_others_finish(cluster, data_dir, local_root,
                                                         tmp_path):
  cells = [cells_lib.get_cell(c) for c in CELLS]
  bindings = _bindings(data_dir) + ['train.steps = 2']
  good = plan_lib.make_plan(cells[:1], (0,), str(tmp_path), (), bindings)[0]
  bad = plan_lib.make_plan(cells[1:], (0,), str(tmp_path), (),
                           bindings + ['build_critic.no_such_parameter = 1'])[0]
  # A model dir that holds an unfinished run of another configuration: bin/train refuses
  # to resume it.
  other = plan_lib.make_plan(cells[1:], (1,), str(tmp_path), (),
                             bindings + ['ssl.lambda_ce = 5.0'])[0]
  shutil.copytree(os.path.join(local_root, *CELLS[1].split('/'), 'seed_1'), other.model_dir)
  os.remove(os.path.join(other.model_dir, run_files.METRICS_FILE))
  reports = []
  outcomes = ray_backend.run_plan([bad, other, good], str(tmp_path), address=cluster,
                                  max_retries=2, report=reports.append)

  assert [o.status for o in outcomes] == [runner.FAILED, runner.FAILED, runner.SUCCEEDED]
  assert [o.returncode for o in outcomes[:2]] == [1, 1]
  for run in (bad, other):  # A run that fails by itself is not retried.
    with open(os.path.join(run.model_dir, ray_backend.ATTEMPT_FILE)) as f:
      assert json.load(f)['attempt'] == 1
  assert not any('retry' in r for r in reports)
  summary = runner.summary(outcomes)
  assert '1 trained, 0 already finished, 2 failed' in summary
  bad_line, other_line = [line for line in summary.splitlines() if line.startswith('  ')]
  assert bad_line.startswith(f'  {bad.name}: error: bad gin configuration')
  assert 'no_such_parameter' in bad_line
  assert f'log: {runner.log_path(bad)}' in bad_line
  assert other_line.startswith(f'  {other.name}: error: {other.model_dir} holds a run '
                               'started with a different configuration')
  assert 'ssl.lambda_ce: run ' in other_line and ', now 5.0' in other_line
  assert sum('FAILED (exit status 1)' in r for r in reports) == 2
  assert 'done 1 / running 0 / failed 2 / left 0' in reports[-1]
  with open(os.path.join(str(tmp_path), runner.SWEEP_LOG_FILE)) as f:
    logged = sorted((r['cell'], r['seed'], r['status']) for r in map(json.loads, f))
  assert logged == [(CELLS[0], 0, 'succeeded'), (CELLS[1], 0, 'failed'),
                    (CELLS[1], 1, 'failed')]


@pytest.mark.integration
def test_a_killed_trainer_is_retried_up_to_max_retries(cluster, tmp_path):
  (run,) = plan_lib.make_plan([cells_lib.get_cell(CELLS[0])], (0,), str(tmp_path))
  os.makedirs(run.model_dir)
  open(os.path.join(run.model_dir, 'kill'), 'w').close()
  reports = []
  (outcome,) = ray_backend.run_plan([run], str(tmp_path), address=cluster, max_retries=1,
                                    program=FAKE_TRAIN, report=reports.append)

  assert outcome.status == runner.FAILED
  with open(os.path.join(run.model_dir, 'calls.txt')) as f:
    assert len(f.readlines()) == 2  # The first attempt and one retry.
  assert 'killed or terminated' in outcome.log_tail
  assert 'no retries left' in runner.last_error_line(outcome.log_tail)
  assert 'the fake run kills itself' in outcome.log_tail


# Without a cluster.


def test_a_retry_on_another_host_takes_over_the_dead_attempts_lock(tmp_path, monkeypatch):
  model_dir = str(tmp_path)
  assert ray_backend.begin_attempt(model_dir, 'token') == 1
  with open(os.path.join(model_dir, ray_backend.ATTEMPT_FILE)) as f:
    first = json.load(f)
  with open(os.path.join(model_dir, run_lock.LOCK_FILE), 'w') as f:
    json.dump({'host': first['host'], 'pid': 12345}, f)
  # The same host retries: bin/train itself sees whether the PID lives; the lock stays.
  assert ray_backend.begin_attempt(model_dir, 'token') == 2
  assert os.path.exists(os.path.join(model_dir, run_lock.LOCK_FILE))
  # Another host retries the attempt that died on the first one: the lock goes.
  monkeypatch.setattr(socket, 'gethostname', lambda: 'other-node')
  assert ray_backend.begin_attempt(model_dir, 'token') == 3
  assert not os.path.exists(os.path.join(model_dir, run_lock.LOCK_FILE))
  with open(os.path.join(model_dir, runner.LOG_FILE)) as f:
    assert 'its Ray worker or node died' in f.read()
  # A lock of another sweep's trainer is never touched.
  with open(os.path.join(model_dir, run_lock.LOCK_FILE), 'w') as f:
    json.dump({'host': 'third-node', 'pid': 1}, f)
  assert ray_backend.begin_attempt(model_dir, 'another sweep') == 1
  assert os.path.exists(os.path.join(model_dir, run_lock.LOCK_FILE))


def test_missing_ray_is_one_line(monkeypatch, tmp_path):
  monkeypatch.setitem(sys.modules, 'ray', None)
  with pytest.raises(errors.ConfigError, match=r"pip install -e '\.\[ray\]'"):
    ray_backend.import_ray()
  # bin/sweep says it in one line, without a traceback (ray hidden from the subprocess).
  hide = tmp_path / 'hide'
  hide.mkdir()
  (hide / 'ray.py').write_text("raise ImportError('No module named ray')\n")
  env = dict(os.environ, PYTHONPATH=str(hide))
  result = subprocess.run([sys.executable, SWEEP, f'--cells={CELLS[0]}', '--seeds=1',
                           f'--root={tmp_path / "runs"}', '--backend=ray'],
                          capture_output=True, text=True, timeout=120, env=env)
  assert result.returncode == 1
  assert "error: --backend=ray needs Ray, which is not installed: pip install -e '.[ray]'" in (
      result.stderr)
  assert 'Traceback' not in result.stderr


def test_bin_sweep_ray_flags(tmp_path):
  result = subprocess.run([sys.executable, SWEEP, '--help'], capture_output=True, text=True,
                          timeout=120)
  for flag in ('--backend', '--ray_address', '--cpus_per_run', '--gpus_per_run',
               '--max_retries'):
    assert flag in result.stdout, flag
  result = subprocess.run([sys.executable, SWEEP, f'--cells={CELLS[0]}', '--seeds=1',
                           f'--root={tmp_path}', '--backend=ray', '--workers=2'],
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 1 and '--workers is for --backend=local' in result.stderr
  assert 'Traceback' not in result.stderr
  result = subprocess.run([sys.executable, SWEEP, f'--cells={CELLS[0]}', '--seeds=1',
                           f'--root={tmp_path}', '--gpus_per_run=1', '--dry_run'],
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 1
  assert 'error: --gpus_per_run: only with --backend=ray' in result.stderr


def test_progress_line():
  cell = cells_lib.get_cell(CELLS[0])
  runs = plan_lib.make_plan([cell], (0, 1, 2, 3, 4), '/tmp/sweep')
  progress = runner.Progress(len(runs), slots=2)
  assert progress.line() == ('done 0 / running 0 / failed 0 / left 5, ETA after the first '
                             'run')
  progress.started(runs[0].name)
  progress.started(runs[1].name)
  progress.finished(runner.Outcome(runs[0], runner.SUCCEEDED, 0, 100.0))
  progress.finished(runner.Outcome(runs[1], runner.FAILED, 1, 10.0))
  progress.finished(runner.Outcome(runs[2], runner.SKIPPED))
  # 100 s per trained run x 2 left / 2 at once.
  assert progress.line() == 'done 2 / running 0 / failed 1 / left 2, ETA 100 s'
