"""One bin/sweep per root: a second one is refused in one line naming the first, or with
--wait waits for it; a lock whose sweep is gone is taken over, saying so; the lock goes when
the sweep ends. The root holds one finished run, so that each sweep trains nothing."""
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import sweep_lock

SWEEP = str(cells_lib.REPO_ROOT / 'bin' / 'sweep')
CELL = cells_lib.get_cell('table2/cifar10_fisher_f')
FLAGS = ('--cells=table2/cifar10_fisher_f', '--seeds=1', '--noplots')
SINCE = r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC'


@pytest.fixture
def root(tmp_path):
  root = str(tmp_path / 'root')
  fake_results.write_run(root, CELL, 0, 20.0, num_labeled=100)
  return root


def _command(root, *extra):
  return [sys.executable, SWEEP, *FLAGS, f'--root={root}', *extra]


def _sweep(root, *extra):
  return subprocess.run(_command(root, *extra), capture_output=True, text=True, timeout=120)


def _lock(root):
  return os.path.join(root, sweep_lock.LOCK_FILE)


def _dead_pid():
  process = subprocess.Popen([sys.executable, '-c', ''])
  process.wait()
  return process.pid


@pytest.fixture
def held(root):
  """The root's lock, held by this test process (a first sweep) until the test ends."""
  path = sweep_lock.acquire(root)
  yield path
  sweep_lock.release(path)


def test_a_second_sweep_is_refused_in_one_line_naming_the_first(root, held):
  with open(held) as f:
    lock = f.read()
  result = _sweep(root)
  assert result.returncode == 1
  assert 'Traceback' not in result.stderr
  (line,) = result.stderr.strip().splitlines()
  assert re.fullmatch(
      rf'error: Another bin/sweep \(PID {os.getpid()} on {re.escape(socket.gethostname())}, '
      rf'since {SINCE}\) holds {re.escape(root)}; wait for it or rerun with --wait\.', line), line
  assert not os.path.exists(os.path.join(root, 'tables'))  # It did nothing.
  with open(held) as f:
    assert f.read() == lock  # The first sweep's lock, as it was.


def test_dry_run_and_tables_only_only_read_and_take_no_lock(root, held):
  for flag in ('--dry_run', '--tables_only'):
    result = _sweep(root, flag)
    assert result.returncode == 0, result.stderr
  assert os.path.exists(held)


def test_with_wait_the_second_sweep_waits_then_runs(root, held):
  env = dict(os.environ, TF_IPMSSL_SWEEP_LOCK_POLL='0.1')
  sweep = subprocess.Popen(_command(root, '--wait'), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env)
  try:
    line = sweep.stdout.readline()
    assert re.fullmatch(
        rf'Another bin/sweep \(PID {os.getpid()} on .*, since {SINCE}\) holds '
        rf'{re.escape(root)}; waiting for it to end \(--wait\)\.\n', line), line
    time.sleep(0.5)
    assert sweep.poll() is None  # Still waiting.
    assert not os.path.exists(os.path.join(root, 'tables'))
    sweep_lock.release(held)
    out, err = sweep.communicate(timeout=120)
  finally:
    sweep.kill()
  assert sweep.returncode == 0, err
  assert 'waiting' not in out  # One line said, however long it waited.
  assert '1 run(s): 0 trained, 1 already finished, 0 failed' in out
  assert not os.path.exists(_lock(root))


def test_a_stale_lock_is_taken_over_in_one_line_and_removed_at_the_end(root):
  pid = _dead_pid()
  with open(_lock(root), 'w') as f:
    f.write(f'{{"host": "{socket.gethostname()}", "pid": {pid}, "started": 1796538704.5}}')
  result = _sweep(root)
  assert result.returncode == 0, result.stderr
  taken = [l for l in result.stdout.splitlines() if 'Took over' in l]
  assert taken == [f'Took over the lock {_lock(root)} of a bin/sweep that is no longer running '
                   f'(PID {pid} on {socket.gethostname()}, since 2026-12-06 06:31:44 UTC).']
  assert '1 run(s): 0 trained, 1 already finished, 0 failed' in result.stdout
  assert not os.path.exists(_lock(root))


def test_a_lock_of_another_host_is_refused_naming_the_file(root):
  lock = '{"host": "elsewhere", "pid": 1, "started": 1796538704.5}'
  with open(_lock(root), 'w') as f:
    f.write(lock)
  with pytest.raises(sweep_lock.Held) as refused:
    sweep_lock.acquire(root)
  message = (
      f'Another bin/sweep (PID 1 on elsewhere, since 2026-12-06 06:31:44 UTC) holds {root}; '
      f'wait for it or rerun with --wait; if no sweep runs there, remove {_lock(root)}.')
  assert str(refused.value) == message
  # bin/sweep says it in one line, exits 1, and leaves the other host's lock as it was.
  result = _sweep(root)
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert result.stderr.strip().splitlines() == [f'error: {message}']
  with open(_lock(root)) as f:
    assert f.read() == lock


def test_the_lock_is_released_when_the_block_ends_by_an_error(root):
  with pytest.raises(RuntimeError):
    with sweep_lock.hold(root) as path:
      assert os.path.exists(path)
      raise RuntimeError('a failing sweep')
  assert not os.path.exists(_lock(root))
  with sweep_lock.hold(root):  # And it can be taken again.
    pass


def test_sigterm_removes_the_lock(tmp_path):
  """A sweep stopped by SIGTERM while its (fake, slow) trainer runs leaves no lock behind."""
  import signal  # pylint: disable=g-import-not-at-top
  checkout = tmp_path / 'checkout'
  (checkout / 'bin').mkdir(parents=True)
  (checkout / 'bin' / 'train').write_text(
      open(os.path.join(os.path.dirname(__file__), 'fake_train.py')).read())
  (checkout / 'gin' / 'table2').mkdir(parents=True)
  (checkout / 'gin' / 'table2' / 'cifar10_fisher_f.gin').write_text('')
  root = str(tmp_path / 'root')
  sweep = subprocess.Popen(_command(root, f'--train_checkout={checkout}'),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, FAKE_TRAIN_SECONDS='60'))
  started = os.path.join(root, 'table2', 'cifar10_fisher_f', 'seed_0', 'pid')
  try:
    deadline = time.time() + 60
    while not os.path.exists(started):
      assert time.time() < deadline and sweep.poll() is None, sweep.communicate()
      time.sleep(0.1)
    assert os.path.exists(_lock(root))
    sweep.send_signal(signal.SIGTERM)
    _, err = sweep.communicate(timeout=60)
  finally:
    sweep.kill()
  assert sweep.returncode == 143, err
  assert not os.path.exists(_lock(root))
