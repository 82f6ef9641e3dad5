"""One trainer per model_dir: a lock file holding the trainer's host and PID.

A second trainer on the same directory is refused (two trainers would interleave their
checkpoints and metrics). A lock whose process is gone (a killed trainer) is stale and is
taken over. A directory that cannot be written (read-only) is not locked: nothing can be
written there anyway, and a finished run there can still report its result.
"""
import contextlib
import errno
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


def _holder(path):
  """The lock's {'host', 'pid'}, or None when unreadable (a half-written lock)."""
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def _try_create(path):
  try:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
  except FileExistsError:
    return False
  with os.fdopen(fd, 'w') as f:
    json.dump({'host': socket.gethostname(), 'pid': os.getpid()}, f)
  return True


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
    for _ in range(2):
      if _try_create(path):
        return path
      holder = _holder(path) or {}
      same_host = holder.get('host') == socket.gethostname()
      if same_host and isinstance(holder.get('pid'), int) and _alive(holder['pid']):
        raise errors.ConfigError(
            f'{model_dir} is in use by another trainer (PID {holder["pid"]}, lock {path}); '
            'wait for it to finish, or use another --model_dir')
      if holder and not same_host:
        raise errors.ConfigError(
            f'{model_dir} is locked by a trainer on host {holder.get("host")} (PID '
            f'{holder.get("pid")}, lock {path}); if no trainer runs there, remove the lock')
      fault_injection.reach('lock_takeover')
      os.remove(path)  # Stale: its trainer is gone.
  except OSError as e:
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
      return None
    raise
  raise errors.ConfigError(f'could not take the lock {path}: another trainer keeps taking it')


def release(path):
  if path is None:
    return
  holder = _holder(path)
  if holder and holder.get('pid') == os.getpid():
    with contextlib.suppress(OSError):
      os.remove(path)


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
