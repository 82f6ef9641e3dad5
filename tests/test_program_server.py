"""tests/program_server.py: a program forked from the server runs as it runs in a fresh
process (what it sees, what it prints, how it ends, the run it trains), and the server
serves only the calls it can serve that way."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests import program_server
from tests.training import runs

# A program as the bin/ programs start (command_line imported first: TensorFlow's defaults),
# reporting what it sees, then doing what its first argument asks.
PROBE = '''#!/usr/bin/env python3
import json, os, sys
from tf_ipmssl import command_line
import numpy as np
print(json.dumps({
    'argv': sys.argv, 'cwd': os.getcwd(), 'path0': sys.path[0], 'stdin': sys.stdin.read(),
    'fault': os.environ.get('TF_IPMSSL_FAULT'), 'environment': dict(os.environ),
    'random': [np.random.randint(1 << 30), __import__('random').getrandbits(30)],
    'pid': os.getpid(), 'tensorflow_loaded': 'tensorflow' in sys.modules}), flush=True)
print('to stderr', file=sys.stderr)
action = sys.argv[1] if len(sys.argv) > 1 else ''
if action == 'exit3':
  sys.exit(3)
if action == 'message':
  sys.exit('a message')
if action == 'raise':
  raise ValueError('boom')
if action == 'kill':
  os.kill(os.getpid(), 9)
if action == 'sleep':
  import time
  time.sleep(600)
if action == 'thread':
  import atexit, threading, time
  atexit.register(lambda: print('atexit ran', flush=True))
  def late():
    time.sleep(0.5)
    print('thread done', flush=True)
  threading.Thread(target=late).start()
'''
# Not the run's: the variables that differ between any two processes.
_PER_PROCESS = ('PYTEST_CURRENT_TEST',)


@pytest.fixture
def probe(tmp_path, monkeypatch):
  """run(*args, fresh=..., **kwargs) of the probe program, which the server may serve."""
  directory = tmp_path / 'programs'
  directory.mkdir()
  path = directory / 'probe'
  path.write_text(PROBE)
  monkeypatch.setattr(program_server, 'PROGRAM_DIRS', (directory,))

  def run(*args, fresh=False, **kwargs):
    kwargs = {'capture_output': True, 'text': True, 'env': runs.environment(),
              'cwd': str(tmp_path), 'timeout': 300, **kwargs}
    return program_server.run([sys.executable, str(path), *args], fresh=fresh, **kwargs)
  return run


def _seen(result):
  return json.loads(result.stdout.splitlines()[0])


def test_a_forked_program_sees_what_a_fresh_one_sees(probe):
  env = runs.environment(fault='training_done=kill')
  fresh, served, again = (probe('x', 'y z', fresh=f, env=env) for f in (True, False, False))
  seen = [_seen(r) for r in (fresh, served, again)]
  assert not seen[0]['tensorflow_loaded'] and seen[1]['tensorflow_loaded']  # Forked.
  for key in ('argv', 'cwd', 'path0', 'stdin', 'fault'):
    assert seen[1][key] == seen[2][key] == seen[0][key], key
  assert seen[1]['argv'][1:] == ['x', 'y z'] and seen[1]['stdin'] == ''
  assert seen[1]['fault'] == 'training_done=kill'
  for other in seen[1:]:
    assert ({k: v for k, v in other['environment'].items() if k not in _PER_PROCESS}
            == {k: v for k, v in seen[0]['environment'].items() if k not in _PER_PROCESS})
  # Each process its own random states, as fresh processes have.
  assert seen[1]['random'] != seen[2]['random'] and seen[1]['pid'] != seen[2]['pid']
  assert fresh.stderr == served.stderr == 'to stderr\n'
  assert fresh.returncode == served.returncode == 0


@pytest.mark.parametrize('action', ['exit3', 'message', 'raise', 'kill'])
def test_a_forked_program_ends_as_a_fresh_one(probe, action):
  fresh, served = probe(action, fresh=True), probe(action)
  assert _seen(served)['tensorflow_loaded']
  assert served.returncode == fresh.returncode == {
      'exit3': 3, 'message': 1, 'raise': 1, 'kill': -9}[action]
  assert served.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1] == {
      'exit3': 'to stderr', 'message': 'a message', 'raise': 'ValueError: boom',
      'kill': 'to stderr'}[action]


def test_threads_are_joined_and_atexit_handlers_run(probe):
  for result in (probe('thread', fresh=True), probe('thread')):
    assert result.stdout.splitlines()[1:] == ['thread done', 'atexit ran'], result.stdout


def test_a_timeout_kills_the_forked_program(probe):
  with pytest.raises(subprocess.TimeoutExpired) as raised:
    probe('sleep', timeout=3)
  pid = json.loads(raised.value.output.splitlines()[0])['pid']
  with pytest.raises(ProcessLookupError):
    os.kill(pid, 0)
  assert probe().returncode == 0  # The server serves on.


def test_only_what_a_fork_runs_as_a_fresh_process_is_forked(probe):
  assert _seen(probe())['tensorflow_loaded']
  # --verbosity changes how a program imports TensorFlow.
  assert not _seen(probe('--verbosity=1'))['tensorflow_loaded']
  assert not _seen(probe(input='x'))['tensorflow_loaded']
  assert not _seen(probe(fresh=True))['tensorflow_loaded']
  outside = program_server.run([sys.executable, '-c', 'import sys; print(sys.argv)'],
                               capture_output=True, text=True)
  assert outside.stdout == "['-c']\n"


def test_each_environment_has_its_server_ended_by_pid(probe):
  """TensorFlow reads ONEDNN_MAX_CPU_ISA when it loads: a server imported it under the
  environment it serves; a fault to inject is read while the program runs: the same server."""
  # Another limit than this test process's (.ci/run reruns the suite under AVX2's).
  other = 'SSE41' if os.environ.get('ONEDNN_MAX_CPU_ISA') == 'AVX2' else 'AVX2'
  limited = {**runs.environment(), 'ONEDNN_MAX_CPU_ISA': other}
  seen = _seen(probe(env=limited))
  assert seen['tensorflow_loaded'] and seen['environment']['ONEDNN_MAX_CPU_ISA'] == other
  pid = program_server.server_pid(limited)
  assert pid not in (None, program_server.server_pid(runs.environment()))
  faulty = runs.environment(fault='training_done=kill')
  assert _seen(probe(env=faulty))['tensorflow_loaded']
  assert program_server.server_pid(faulty) == program_server.server_pid(runs.environment())
  os.kill(pid, 0)  # Running, until its test process ends it.
  program_server.stop_servers(limited)
  assert program_server.server_pid(limited) is None
  with pytest.raises(ProcessLookupError):
    os.kill(pid, 0)


def _masked(stdout):
  """bin/train's lines without what differs between two processes: speed and wall time."""
  stdout = re.sub(r'[\d.]+ img/s', 'N img/s', stdout)
  stdout = re.sub(r'ETA \S+', 'ETA T', stdout)
  return re.sub(r'Wall time .*', 'Wall time T', stdout)


def _files(model_dir):
  """The run's files, TensorBoard's event files by folder (their names hold time and PID)."""
  return sorted(re.sub(r'events\.out\.tfevents\..*', 'events',
                       os.path.relpath(os.path.join(root, name), model_dir))
                for root, _, names in os.walk(model_dir) for name in names)


@pytest.mark.numerics
def test_a_forked_bin_train_trains_the_run_a_fresh_one_trains(tmp_path_factory, tmp_path):
  """The same tiny run (the test run's shared bindings), trained by bin/train in a fresh
  process and forked from the server: the same computation on this CPU, so the same
  checkpoints bit for bit, the same files, the same lines."""
  data_dir = runs.shared_data(tmp_path_factory)
  results = {}
  for name, fresh in (('fresh', True), ('forked', False)):
    model_dir = str(tmp_path / name)
    result = program_server.run(
        runs.train_command(model_dir, runs.tiny_bindings(data_dir)), fresh=fresh,
        capture_output=True, text=True, env=runs.environment(), timeout=600,
        cwd=str(runs.REPO_ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    results[name] = (model_dir, result)
  (fresh_dir, fresh), (forked_dir, forked) = results['fresh'], results['forked']
  assert _files(forked_dir) == _files(fresh_dir)
  for checkpoint in ('checkpoints/ckpt-4', 'best/ckpt-2'):
    values = [runs.checkpoint_values(os.path.join(d, checkpoint))
              for d in (fresh_dir, forked_dir)]
    assert values[0].keys() == values[1].keys()
    for name, value in values[0].items():
      np.testing.assert_array_equal(values[1][name], value, err_msg=name)
  assert _masked(forked.stdout).replace(forked_dir, 'D') == _masked(fresh.stdout).replace(
      fresh_dir, 'D')
  assert forked.stderr == fresh.stderr == ''
  versions = [json.load(open(os.path.join(d, 'versions.json'))) for d in (fresh_dir, forked_dir)]
  assert versions[1]['numerics'] == versions[0]['numerics']  # The kernels' settings.
  assert ({k: v for k, v in versions[1].items() if k not in ('command', 'started')}
          == {k: v for k, v in versions[0].items() if k not in ('command', 'started')})
