"""The tests' runs of the bin/ and scripts/ programs, forked from a process that has imported
them already.

Starting a program costs seconds before its first line: Python, TensorFlow, Keras and the
package imported (about 4 CPU-seconds each time), and the default suite starts a couple of
hundred. A test process therefore keeps a server process per environment (the two used
last) that has done those imports as a program does them (command_line's TensorFlow defaults
set before TensorFlow is imported) and has run nothing else: no TensorFlow op, no gin file, no flag
parsed. `run` asks the server of the call's environment (apart from the variables read while
a program runs: PYTEST_CURRENT_TEST, TF_IPMSSL_FAULT) to fork, and the forked child runs the
program file as `python bin/<program> ...` runs it: its own environment (with the defaults a
program adds), working directory, argv and sys.path[0], stdin from /dev/null, stdout and
stderr captured, Python's and NumPy's random states seeded afresh, non-daemon threads
joined and atexit handlers run at its end; its exit status, or the signal that killed it,
comes back as subprocess.run reports them. A variable TensorFlow reads when it loads
(ONEDNN_MAX_CPU_ISA, say) thus reaches the program's TensorFlow as in a fresh process.

What a forked child skips is the start-up itself: the imports, the re-execution under the
checkout's .venv, TensorFlow's start-up lines. Those are tested in fresh processes
(tests/install/), and `run` starts a fresh process for every call it cannot serve the same
way: another command (python -c, a shell, a program outside bin/ and scripts/ or not in
Python), input on stdin, output not captured, or --verbosity (which changes how TensorFlow
is imported). `fresh=True` asks for a fresh process anyway.
tests/test_program_server.py checks that a forked run writes what a fresh one writes.

The servers are this test process's: each exits when this process closes its stdin (at
exit, or when this process dies), and `stop_servers` ends them by PID.
"""
import atexit
import collections
import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM_DIRS = (REPO_ROOT / 'bin', REPO_ROOT / 'scripts')
# Variables a program reads while it runs, not while it imports: they may differ from the
# server's.
RUN_TIME_VARIABLES = frozenset({'PYTEST_CURRENT_TEST', 'TF_IPMSSL_FAULT'})
_PYTHON_SHEBANG = b'#!/usr/bin/env python'
_SERVED_KEYWORDS = frozenset({'capture_output', 'text', 'timeout', 'env', 'cwd', 'check'})
# What a server imports before it forks: the modules the programs import, command_line first
# (the programs' TensorFlow defaults, set before TensorFlow loads).
_IMPORTS = ('tf_ipmssl.command_line', 'tensorflow', 'keras', 'absl.app', 'tf_ipmssl.api',
            'tf_ipmssl.diagnosis', 'tf_ipmssl.sweep.runner', 'tf_ipmssl.benchmark.configs')
_START_TIMEOUT = 300
# Servers kept per test process (each holds TensorFlow's memory): the ones used last.
_MAX_SERVERS = 2

_servers = collections.OrderedDict()  # {environment key: _Server}, last used last


def run(args, *, fresh=False, **kwargs) -> subprocess.CompletedProcess:
  """subprocess.run(args, **kwargs), served by a fork of a server where it can be (above)."""
  if fresh or not _servable(args, kwargs):
    return subprocess.run(args, **kwargs)  # pylint: disable=subprocess-run-check
  env = dict(os.environ if kwargs.get('env') is None else kwargs['env'])
  key = _key(env)
  server = _servers.pop(key, None)
  if server is None or not server.alive():
    while len(_servers) >= _MAX_SERVERS:
      _servers.popitem(last=False)[1].stop()
    server = _Server(env)
  _servers[key] = server
  result = server.run(list(args), env, str(kwargs.get('cwd') or os.getcwd()),
                      kwargs.get('timeout'), text=bool(kwargs.get('text')))
  if kwargs.get('check') and result.returncode:
    raise subprocess.CalledProcessError(result.returncode, args, result.stdout,
                                        result.stderr)
  return result


def server_pid(env):
  """The PID of this process's server for the environment `env`; None where none runs."""
  server = _servers.get(_key(env))
  return server.process.pid if server is not None and server.alive() else None


def stop_servers(env=None):
  """Ends this process's server for the environment `env` (every server where None) by PID,
  and waits for it."""
  keys = list(_servers) if env is None else [_key(env)]
  for key in keys:
    server = _servers.pop(key, None)
    if server is not None:
      server.stop()


atexit.register(stop_servers)


def _servable(args, kwargs) -> bool:
  if not set(kwargs) <= _SERVED_KEYWORDS or not kwargs.get('capture_output'):
    return False
  if not isinstance(args, (list, tuple)) or len(args) < 2 or args[0] != sys.executable:
    return False
  program = pathlib.Path(args[1]).resolve()
  if program.parent not in PROGRAM_DIRS or not program.is_file():
    return False
  if program.suffix != '.py':
    with open(program, 'rb') as f:
      if f.read(len(_PYTHON_SHEBANG)) != _PYTHON_SHEBANG:
        return False
  return not any(str(a) == '-v' or str(a).startswith(('--verbosity', '--v=')) for a in args[2:])


def _key(env):
  """The part of an environment a server's imports depend on."""
  return tuple(sorted((k, v) for k, v in env.items() if k not in RUN_TIME_VARIABLES))


class _Server:
  """One server process (this module run as a program) and the pipes to it."""

  def __init__(self, env):
    self._log = tempfile.TemporaryFile()
    self.process = subprocess.Popen(
        [sys.executable, '-m', 'tests.program_server'], cwd=str(REPO_ROOT), env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
    ready = self._read(_START_TIMEOUT)
    if ready is None or 'ready' not in ready:
      self.stop()
      self._log.seek(0)
      raise RuntimeError('the program server did not start: '
                         + self._log.read().decode(errors='replace')[-3000:])

  def alive(self) -> bool:
    return self.process.poll() is None

  def run(self, args, env, cwd, timeout, text):
    with tempfile.TemporaryDirectory() as directory:
      paths = [os.path.join(directory, 'stdout'), os.path.join(directory, 'stderr')]
      self._write({'args': args, 'env': env, 'cwd': cwd, 'stdout': paths[0],
                   'stderr': paths[1]})
      pid = self._read(60)['pid']
      done = self._read(timeout)
      if done is None:  # Timed out: the child's process group is killed, the server reaps it.
        try:
          os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
          pass
        self._read(60)
      out, err = (self._output(p, text) for p in paths)
      if done is None:
        raise subprocess.TimeoutExpired(args, timeout, out, err)
      return subprocess.CompletedProcess(args, done['returncode'], out, err)

  @staticmethod
  def _output(path, text):
    try:
      with open(path, 'rb') as f:
        data = f.read()
    except FileNotFoundError:
      data = b''
    if not text:
      return data
    return data.decode(errors='replace').replace('\r\n', '\n').replace('\r', '\n')

  def _write(self, message):
    self.process.stdin.write((json.dumps(message) + '\n').encode())
    self.process.stdin.flush()

  def _read(self, timeout):
    """The server's next message, or None after `timeout` seconds (None: no limit)."""
    pipe = self.process.stdout
    if not select.select([pipe], [], [], timeout)[0]:
      return None
    line = pipe.readline()
    if not line:
      self._log.seek(0)
      raise RuntimeError('the program server ended: '
                         + self._log.read().decode(errors='replace')[-3000:])
    return json.loads(line)

  def stop(self):
    if self.process.poll() is None:
      try:
        self.process.stdin.close()
        self.process.wait(timeout=10)
      except (OSError, subprocess.TimeoutExpired):
        self.process.kill()
        self.process.wait()
    self._log.close()


# The server: this module run as a program.

def _serve():
  import importlib  # pylint: disable=g-import-not-at-top
  for name in _IMPORTS:
    importlib.import_module(name)
  from tf_ipmssl import command_line  # pylint: disable=g-import-not-at-top
  # The environment a program has after its imports: its TensorFlow defaults added.
  defaulted = command_line._DEFAULTED  # pylint: disable=protected-access
  added = {name: os.environ[name] for name in defaulted}
  requests, replies = sys.stdin.buffer, sys.stdout.buffer

  def reply(message):
    replies.write((json.dumps(message) + '\n').encode())
    replies.flush()

  reply({'ready': True})
  for line in iter(requests.readline, b''):
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
      _child(request, added)  # Never returns.
    reply({'pid': pid})
    _, status = os.waitpid(pid, 0)
    reply({'returncode': os.waitstatus_to_exitcode(status)})


def _child(request, added):
  """Runs the requested program in this forked process and exits with its status."""
  import random  # pylint: disable=g-import-not-at-top
  import runpy  # pylint: disable=g-import-not-at-top
  import threading  # pylint: disable=g-import-not-at-top
  import traceback  # pylint: disable=g-import-not-at-top
  code = 1
  try:
    os.setpgid(0, 0)
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    for fd, path in ((1, request['stdout']), (2, request['stderr'])):
      opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
      os.dup2(opened, fd)
      os.close(opened)
    os.close(stdin)
    sys.stdin = open(0, 'r', closefd=False)  # pylint: disable=consider-using-with
    os.chdir(request['cwd'])
    os.environ.clear()
    os.environ.update({**request['env'], **added})
    script = request['args'][1]
    sys.argv = [script] + request['args'][2:]
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    random.seed()
    if 'numpy' in sys.modules:
      sys.modules['numpy'].random.seed()
    try:
      runpy.run_path(script, run_name='__main__')
      code = 0
    except SystemExit as e:
      code = _exit_status(e.code)
    except KeyboardInterrupt:  # As Python ends on an uncaught Ctrl-C: killed by SIGINT.
      traceback.print_exc()
      code = -signal.SIGINT
    except BaseException:  # pylint: disable=broad-except
      traceback.print_exc()
      code = 1
    for thread in threading.enumerate():
      if thread is not threading.current_thread() and not thread.daemon:
        thread.join()
    atexit._run_exitfuncs()  # pylint: disable=protected-access
  finally:
    try:
      sys.stdout.flush()
      sys.stderr.flush()
    finally:
      if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
      os._exit(code)  # pylint: disable=protected-access


def _exit_status(code):
  """The exit status Python gives sys.exit(code)."""
  if code is None:
    return 0
  if isinstance(code, int):
    return code & 0xFF
  print(code, file=sys.stderr)
  return 1


if __name__ == '__main__':
  _serve()
