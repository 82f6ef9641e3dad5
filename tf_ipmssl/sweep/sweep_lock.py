"""One bin/sweep per root: a lock file in the root holding the sweep's host, PID and start.

Two sweeps on one root would start the same runs (each refused by the other's run lock) and
both fail, so a second sweep is refused at once, in one line naming the first, or with
--wait waits for it to end. The lock is run_dir/run_lock.py's: an flock(2) the kernel drops
however the sweep ends, and a file whose process is gone on this host is stale and taken
over (saying so). The sweep removes it when it ends: normally, by an error, or by SIGTERM
(bin/sweep's handler calls `release`); after kill -9 the next sweep takes it over.
"""
import contextlib
import datetime
import os
import time

from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_lock

LOCK_FILE = '.sweep_lock'
# Seconds between two looks at a lock held by another sweep, with --wait.
POLL_SECONDS = float(os.environ.get('TF_IPMSSL_SWEEP_LOCK_POLL', '2'))


class Held(errors.ConfigError):
  """Another live bin/sweep holds the root: `holding`, 'Another bin/sweep (...) holds R'."""

  def __init__(self, holding, fix):
    super().__init__(f'{holding}; {fix}.')
    self.holding = holding


def _since(holder):
  started = (holder or {}).get('started')
  if not isinstance(started, (int, float)):
    return ''
  when = datetime.datetime.fromtimestamp(started, datetime.timezone.utc)
  return f', since {when:%Y-%m-%d %H:%M:%S} UTC'


def _who(holder):
  """'PID 1234 on host, since 2026-12-06 07:40:12 UTC' (what the lock file tells)."""
  holder = holder or {}
  pid = holder.get('pid')
  return (f'PID {pid if pid is not None else "unknown"} on '
          f'{holder.get("host", "an unknown host")}{_since(holder)}')


def _refusal(root, path):
  def refuse(holder, elsewhere):
    fix = 'wait for it or rerun with --wait'
    if elsewhere:
      fix += f'; if no sweep runs there, remove {path}'
    return Held(f'Another bin/sweep ({_who(holder)}) holds {root}', fix)
  return refuse


def acquire(root, wait=False):
  """Takes the root's lock; returns its path. With `wait`, a lock another sweep holds is
  waited for (one line said, then a look every POLL_SECONDS).

  Raises:
    Held: another sweep holds it (and not `wait`).
  """
  os.makedirs(root, exist_ok=True)
  path = os.path.join(root, LOCK_FILE)
  refuse = _refusal(root, path)
  waiting = False
  while True:
    try:
      stale = run_lock.take(path, refuse, {'started': time.time()})
      break
    except Held as e:
      if not wait:
        raise
      if not waiting:
        print(f'{e.holding}; waiting for it to end (--wait).', flush=True)
        waiting = True
      time.sleep(POLL_SECONDS)
  if stale:
    print(f'Took over the lock {path} of a bin/sweep that is no longer running '
          f'({_who(stale)}).', flush=True)
  return path


def release(path):
  """Removes the lock (nothing when this process does not hold it)."""
  run_lock.release(path)


@contextlib.contextmanager
def hold(root, wait=False):
  """The root's lock for the duration of the block (acquire, then release however the block
  ends)."""
  path = acquire(root, wait)
  try:
    yield path
  finally:
    release(path)
