"""SIGTERM as a request to stop at the end of the current step (cluster preemption): SLURM,
Kubernetes and preemptible VMs stop a job with SIGTERM and a grace period before SIGKILL.
While `on_sigterm()` is active the signal only sets a flag, which the loop checks after
every completed step; the program ends with one line and exit status 143 (128 + SIGTERM),
so that rerunning the same command resumes exactly there (docs/reliability.md). bin/train
keeps it active from before it takes the run's lock until it has released it: a SIGTERM
before the first step stops the run there (one line, 143), one after the last step lets the
export finish (exit 0); either way the lock is released.
"""
import contextlib
import signal
import threading


class _Request:
  requested = False


# The request of the outermost on_sigterm() in force, shared by those nested in it.
_active = None


@contextlib.contextmanager
def on_sigterm():
  """Yields an object whose `requested` turns True when SIGTERM arrives; restores the
  previous handler on exit. Nested in another, it yields the outer one's request. Outside
  the main thread (no signal handlers there) it yields a request that never turns True."""
  global _active
  if _active is not None:
    yield _active
    return
  request = _Request()
  if threading.current_thread() is not threading.main_thread():
    yield request
    return

  def handler(signum, frame):
    del signum, frame
    request.requested = True

  previous = signal.signal(signal.SIGTERM, handler)
  _active = request
  try:
    yield request
  finally:
    _active = None
    signal.signal(signal.SIGTERM, previous)
