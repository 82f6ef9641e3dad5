"""A helper process on localhost (a TensorBoard, a test's server), stopped by its PID: for the
tests and the studies' scripts."""
import contextlib
import socket
import subprocess
import sys


def free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def stop(process, grace_seconds=20):
  """SIGTERM, then SIGKILL if the process is still there after grace_seconds."""
  process.terminate()
  try:
    process.wait(timeout=grace_seconds)
  except subprocess.TimeoutExpired:
    process.kill()
    process.wait()


@contextlib.contextmanager
def tensorboard(logdir, *flags):
  """A TensorBoard on localhost over logdir; yields its URL; stopped by its PID."""
  port = free_port()
  process = subprocess.Popen(
      [sys.executable, '-m', 'tensorboard.main', f'--logdir={logdir}', '--host=127.0.0.1',
       f'--port={port}', '--load_fast=false', *flags],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    yield f'http://127.0.0.1:{port}'
  finally:
    stop(process)
