"""SIGTERM as a request to stop at the end of the current step (cluster preemption).

SLURM, Kubernetes and preemptible VMs stop a job with SIGTERM and a grace period before
SIGKILL. While `on_sigterm()` is active the signal only sets a flag; the training loop
checks it after every completed step, writes a checkpoint at that step and stops with one
line and exit status 143 (128 + SIGTERM), so that rerunning the same command resumes
exactly there (docs/reliability.md).
"""
import contextlib
import signal
import threading


class _Request:
  requested = False


@contextlib.contextmanager
def on_sigterm():
  """Yields an object whose `requested` turns True when SIGTERM arrives; restores the
  previous handler on exit. Outside the main thread (no signal handlers there) it yields a
  request that never turns True."""
  request = _Request()
  if threading.current_thread() is not threading.main_thread():
    yield request
    return

  def handler(signum, frame):
    del signum, frame
    request.requested = True

  previous = signal.signal(signal.SIGTERM, handler)
  try:
    yield request
  finally:
    signal.signal(signal.SIGTERM, previous)
