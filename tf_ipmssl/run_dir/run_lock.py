"""One trainer per model_dir: a lock file holding the trainer's host and PID.

A second trainer on the same directory is refused (two trainers would interleave their
checkpoints and metrics). A lock whose process is gone (a killed trainer) is stale and is
taken over. A directory that cannot be written (read-only) is not locked: nothing can be
written there anyway, and a finished run there can still report its result.

The holder also keeps an exclusive flock(2) on the lock file for as long as it holds it; the
kernel drops it when the process dies, however it dies. Deciding that a lock is stale and
taking it over happens under that flock, so of two trainers racing for one stale lock only
one takes it (the other is refused), and a lock file removed or replaced meanwhile is
noticed (its inode is no longer the path's) and the attempt starts again.

`take` and `release` are that mechanism for any lock file: bin/sweep locks its root with
them too (sweep/sweep_lock.py).
"""
import contextlib
import errno
import fcntl
import json
import os
import socket

from tf_ipmssl import errors
from tf_ipmssl import fault_injection

LOCK_FILE = 'train.lock'


def _alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # Exists, owned by someone else.
    return True
  return True


# The lock files this process holds: their path -> the open descriptor that keeps the flock.
_held = {}


def _holder(path):
  """The lock's {'host', 'pid'}, or None when unreadable (a half-written lock)."""
  try:
    with open(path) as f:
      holder = json.load(f)
  except (OSError, ValueError):
    return None
  return holder if isinstance(holder, dict) else None


def _is_the_path(fd, path):
  """Whether the open file `fd` is still the file at `path` (not removed or replaced)."""
  try:
    return os.path.samestat(os.fstat(fd), os.stat(path))
  except FileNotFoundError:
    return False


def _in_use(model_dir, path, holder):
  pid = (holder or {}).get('pid')
  who = f'PID {pid}, ' if isinstance(pid, int) and _alive(pid) else ''
  return errors.ConfigError(
      f'{model_dir} is in use by another trainer ({who}lock {path}); wait for it to '
      'finish, or use another --model_dir')


def _trainer_refusal(model_dir, path):
  """The `refuse` of take() for a trainer's lock."""
  def refuse(holder, elsewhere):
    if not elsewhere:
      return _in_use(model_dir, path, holder)
    return errors.ConfigError(
        f'{model_dir} is locked by a trainer on host {holder.get("host")} (PID '
        f'{holder.get("pid")}, lock {path}); if no trainer runs there, remove the lock')
  return refuse


def _try_take(path, refuse, record):
  """Takes the lock at `path` (the module doc), writing `record` (with host and pid) into it.

  Returns:
    None when the file changed meanwhile (try again), else the stale holder taken over ({}
    when there was none).
  Raises:
    refuse(holder, elsewhere): a live process holds it (`elsewhere`: on another host, whose
      PIDs cannot be checked).
  """
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      raise refuse(_holder(path), False) from None
    holder = _holder(path)
    if holder:
      same_host = holder.get('host') == socket.gethostname()
      pid = holder.get('pid')
      if same_host and isinstance(pid, int) and pid != os.getpid() and _alive(pid):
        raise refuse(holder, False)  # A holder that keeps no flock.
      if not same_host:
        raise refuse(holder, True)
      fault_injection.reach('lock_takeover')  # Stale: its process is gone.
    if not _is_the_path(fd, path):
      os.close(fd)
      return None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(dict(record, host=socket.gethostname(), pid=os.getpid())).encode())
  except BaseException:
    os.close(fd)
    raise
  _held[path] = fd
  return holder or {}


def take(path, refuse, record=None):
  """Takes the lock file at `path` for this process (the module doc: an flock kept until
  release(path), the file holding this host, PID and `record`); a lock whose process is gone
  on this host is stale and is taken over. bin/train's run lock and bin/sweep's root lock.

  Returns:
    The stale holder taken over ({} when there was none).
  Raises:
    refuse(holder, elsewhere): a live process holds the lock (`holder`: its record, None when
      unreadable; `elsewhere`: it is on another host, whose PIDs cannot be checked), or
    ConfigError: the file kept changing while this process tried to take it.
  """
  for _ in range(10):
    stale = _try_take(path, refuse, record or {})
    if stale is not None:
      return stale
  raise errors.ConfigError(f'could not take the lock {path}: another process keeps taking it')


def _check_is_directory(model_dir):
  """A ConfigError when model_dir, or a folder above it, is a file."""
  path = os.path.abspath(model_dir)
  while True:
    if os.path.lexists(path) and not os.path.isdir(path):
      what = ('is a file' if path == os.path.abspath(model_dir) else
              f'lies under {path}, which is a file')
      raise errors.ConfigError(f'--model_dir {model_dir} {what}, not a directory; choose a '
                               'directory (a new one for a new run)')
    parent = os.path.dirname(path)
    if parent == path:
      return
    path = parent


def acquire(model_dir):
  """Takes the lock; returns its path, or None when model_dir cannot be written.

  Raises:
    ConfigError: another live trainer on this host holds the lock.
  """
  if '://' in model_dir:  # Remote file systems have no PIDs to check.
    return None
  path = os.path.join(model_dir, LOCK_FILE)
  _check_is_directory(model_dir)
  try:
    os.makedirs(model_dir, exist_ok=True)
    take(path, _trainer_refusal(model_dir, path))
  except OSError as e:
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
      return None
    raise
  return path


def release(path):
  """Removes the lock file, then drops its flock (a process waiting on this file then finds
  it removed and starts again on a new one). Nothing when this process does not hold it."""
  fd = _held.pop(path, None)
  if fd is None:
    return
  try:
    holder = _holder(path)
    if holder and holder.get('pid') == os.getpid() and _is_the_path(fd, path):
      with contextlib.suppress(OSError):
        os.remove(path)
  finally:
    os.close(fd)


@contextlib.contextmanager
def hold(model_dir):
  """The lock for the duration of the block. A model dir this call created and that is
  empty at the end (a start that failed before writing anything) is removed again."""
  created = '://' not in model_dir and not os.path.isdir(model_dir)
  path = acquire(model_dir)
  try:
    yield path
  finally:
    release(path)
    if created:
      with contextlib.suppress(OSError):  # Not empty (or gone): keep it.
        os.rmdir(model_dir)
