"""train.lock under races: of two trainers taking over one stale lock exactly one gets it,
the other is refused in one line; a stale lock that vanishes during the takeover is no
crash. The takeover is held at the `lock_takeover` fault point (a barrier), so the order of
the two processes is fixed, not left to timing."""
import json
import os
import socket
import subprocess
import sys
import time

from tests.training import runs

# Takes the lock of argv[1], says `holds` (or `refused: <message>`), keeps it until stdin
# closes.
_HOLDER = """
import sys
from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_lock
try:
  path = run_lock.acquire(sys.argv[1])
except errors.ConfigError as e:
  print(f'refused: {e}', flush=True)
  sys.exit(1)
print('holds', flush=True)
sys.stdin.read()
run_lock.release(path)
"""


def _stale_lock(model_dir):
  dead = subprocess.run([sys.executable, '-c', 'import os; print(os.getpid())'],
                        capture_output=True, text=True, check=True)
  os.makedirs(model_dir)
  with open(os.path.join(model_dir, 'train.lock'), 'w') as f:
    json.dump({'host': socket.gethostname(), 'pid': int(dead.stdout)}, f)


def _holder(model_dir, fault=None):
  return subprocess.Popen([sys.executable, '-c', _HOLDER, model_dir], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=runs.environment(fault), cwd=str(runs.REPO_ROOT))


def _wait_for(path, process):
  deadline = time.time() + 120
  while not os.path.exists(path):
    assert process.poll() is None, process.communicate()
    assert time.time() < deadline, f'{path} never appeared'
    time.sleep(0.01)


def _finish(process):
  out, err = process.communicate('', timeout=60)
  return out.strip(), err


def test_two_trainers_taking_over_a_stale_lock_one_gets_it(tmp_path):
  model_dir, barrier = str(tmp_path / 'model'), tmp_path / 'barrier'
  barrier.mkdir()
  _stale_lock(model_dir)
  first = _holder(model_dir, fault=f'lock_takeover=pause:{barrier}')
  second = None
  try:
    _wait_for(barrier / 'lock_takeover.reached', first)
    # The first is about to take the stale lock over; the second tries now.
    second = _holder(model_dir)
    second_line = second.stdout.readline().strip()
    (barrier / 'lock_takeover.continue').touch()
    first_line = first.stdout.readline().strip()
  finally:
    (barrier / 'lock_takeover.continue').touch()
    outcomes = [_finish(p) for p in (first, second) if p is not None]
  lines = [first_line, second_line]
  assert sorted(l.split(':')[0] for l in lines) == ['holds', 'refused'], (lines, outcomes)
  for _, err in outcomes:
    assert 'Traceback' not in err, err
  refused = [l for l in lines if l.startswith('refused')][0]
  assert 'is in use by another trainer' in refused
  assert not os.path.exists(os.path.join(model_dir, 'train.lock'))


def test_a_stale_lock_removed_during_the_takeover_is_no_crash(tmp_path):
  model_dir, barrier = str(tmp_path / 'model'), tmp_path / 'barrier'
  barrier.mkdir()
  _stale_lock(model_dir)
  first = _holder(model_dir, fault=f'lock_takeover=pause:{barrier}')
  try:
    _wait_for(barrier / 'lock_takeover.reached', first)
    os.remove(os.path.join(model_dir, 'train.lock'))  # As a trainer finishing would.
    (barrier / 'lock_takeover.continue').touch()
    line = first.stdout.readline().strip()
  finally:
    (barrier / 'lock_takeover.continue').touch()
    out, err = _finish(first)
  assert line == 'holds', (line, out, err)
  assert 'Traceback' not in err, err
