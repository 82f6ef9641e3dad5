"""Helpers for end-to-end trainer tests: tiny fake data and bin/train in a subprocess.

`shared_run(tmp_path_factory)` is the finished tiny run many test files read, trained once
per test run (the first test process to ask trains it under a file lock; the others
wait and read it), with its tiny data; `copy_of_shared_run(directory)` is a copy a test may
change.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

from tests import fixtures
from tests import program_server

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
TRAIN = str(REPO_ROOT / 'bin' / 'train')
SSL_GIN = str(REPO_ROOT / 'gin' / 'bases' / 'ssl.gin')


def make_data(directory, name='fashion_mnist', num_train=160, num_test=40):
  fixtures.make_fake_dataset(str(directory), name, num_train=num_train, num_test=num_test)
  return str(directory)


def tiny_bindings(data_dir, dataset='fashion_mnist', **overrides):
  """A run small enough for the default suite: narrow networks, batch 16, a few steps."""
  bindings = {
      'build_ssl_data.dataset': repr(dataset),
      'build_ssl_data.source': "'local'",
      'build_ssl_data.data_dir': repr(str(data_dir)),
      'build_ssl_data.num_labeled': '20',
      'build_ssl_data.validation_size': '20',
      'build_critic.width': '0.0625',
      'build_generator.ngf': '4',
      'ssl.constraints': '[@Fisher()]',
      'train.batch_size': '16',
      'train.steps': '4',
      'train.log_every': '2',
      'train.eval_every': '2',
      'train.checkpoint_every': '2',
      'train.sample_every': '2',
  }
  bindings.update({k: str(v) for k, v in overrides.items()})
  return [f'{k} = {v}' for k, v in bindings.items()]


def train_flags(model_dir, bindings, gin_files=(SSL_GIN,)):
  return ([f'--model_dir={model_dir}'] + [f'--gin_file={f}' for f in gin_files]
          + [f'--gin_bindings={b}' for b in bindings])


def train_command(model_dir, bindings, gin_files=(SSL_GIN,)):
  return [sys.executable, TRAIN, *train_flags(model_dir, bindings, gin_files)]


def environment(fault=None):
  """This environment for a bin/ program; `fault`: its TF_IPMSSL_FAULT (fault_injection.py)."""
  env = dict(os.environ)
  env['TF_CPP_MIN_LOG_LEVEL'] = '2'
  env['PYTHONPATH'] = str(REPO_ROOT) + os.pathsep + env.get('PYTHONPATH', '')
  env.pop('TF_IPMSSL_FAULT', None)
  if fault:
    env['TF_IPMSSL_FAULT'] = fault
  return env


def run_program(name, *flags, timeout=300, cwd=None, fault=None):
  """Runs bin/<name> with `flags` to completion in environment(fault), forked from a server
  where it can be (tests/program_server.py); returns the CompletedProcess (text output).
  `fault`: a fault to fire in it (fault_injection.py, e.g. 'checkpoint_written#2=kill');
  `cwd`: its working directory (default this process's)."""
  return program_server.run([sys.executable, str(REPO_ROOT / 'bin' / name), *flags],
                            capture_output=True, text=True, timeout=timeout,
                            env=environment(fault), cwd=cwd)


def run_train(model_dir, bindings, gin_files=(SSL_GIN,), timeout=600, fault=None, cwd=None):
  """Runs bin/train to completion; returns the CompletedProcess (text output). `fault`:
  a fault to fire in it (fault_injection.py, e.g. 'checkpoint_written#2=kill'); `cwd`: its
  working directory (default the repository root; a relative model_dir is relative to it)."""
  return run_program('train', *train_flags(model_dir, bindings, gin_files), timeout=timeout,
                     cwd=str(cwd or REPO_ROOT), fault=fault)


def train_with_gin_lines(directory, gin_lines, **overrides):
  """bin/train on tiny fake data under `directory` (a pathlib.Path), with the SSL base, a gin
  file of `gin_lines` (e.g. the `import` that registers a test's own class) and
  tiny_bindings(**overrides); returns (model_dir, the CompletedProcess)."""
  data_dir = make_data(directory / 'data')
  extra_gin = directory / 'extra.gin'
  extra_gin.write_text(''.join(f'{line}\n' for line in gin_lines))
  model_dir = str(directory / 'run')
  return model_dir, run_train(model_dir, tiny_bindings(data_dir, **overrides),
                              gin_files=(SSL_GIN, str(extra_gin)))


def checkpoint_values(checkpoint_prefix):
  """{variable name: value} of every variable in a checkpoint (no TF graph needed)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(checkpoint_prefix)
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
          if not name.startswith('_CHECKPOINTABLE_OBJECT_GRAPH')}


def restore_run(model_dir):
  """run.Run.from_model_dir(model_dir) (the run rebuilt from its run_config.json)."""
  from tf_ipmssl.training import run as run_lib  # pylint: disable=g-import-not-at-top
  return run_lib.Run.from_model_dir(model_dir)


def _run_root(tmp_path_factory):
  """The folder the processes of this test run share: the base temp directory of
  pytest's own process (its workers' each lie inside it), created here where missing."""
  base = tmp_path_factory.getbasetemp()
  root = base.parent if os.environ.get('PYTEST_XDIST_WORKER') else base
  shared = root / 'shared'
  shared.mkdir(exist_ok=True)
  return shared


@contextlib.contextmanager
def _locked(path):
  """An exclusive lock on the file `path` for the block (across the test run's processes)."""
  with open(path, 'a') as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(f, fcntl.LOCK_UN)


def shared_data(tmp_path_factory):
  """The test run's tiny fake Fashion-MNIST (make_data's defaults), made once."""
  shared = _run_root(tmp_path_factory)
  directory = shared / 'data'
  with _locked(shared / 'data.lock'):
    if not (directory / 'complete').exists():
      shutil.rmtree(directory, ignore_errors=True)
      make_data(directory)
      (directory / 'complete').write_text('')
  return str(directory)


def shared_run(tmp_path_factory, **overrides):
  """(data_dir, model_dir, the CompletedProcess of its training) of the finished run of
  bin/train with the SSL base and tiny_bindings(shared_data, **overrides), trained once per
  test run for each set of overrides. Read it; change only a copy (copy_of_shared_run)."""
  data_dir = shared_data(tmp_path_factory)
  bindings = tiny_bindings(data_dir, **overrides)
  key = hashlib.sha256('\n'.join(bindings).encode()).hexdigest()[:16]
  shared = _run_root(tmp_path_factory)
  model_dir, record = shared / f'run_{key}', shared / f'run_{key}.json'
  with _locked(shared / f'run_{key}.lock'):
    if not record.exists():
      shutil.rmtree(model_dir, ignore_errors=True)
      result = run_train(str(model_dir), bindings)
      assert result.returncode == 0, result.stdout + result.stderr
      record.write_text(json.dumps({'stdout': result.stdout, 'stderr': result.stderr}))
  output = json.loads(record.read_text())
  result = subprocess.CompletedProcess(train_command(str(model_dir), bindings), 0,
                                       output['stdout'], output['stderr'])
  return data_dir, str(model_dir), result


def copy_of_shared_run(tmp_path_factory, directory, **overrides):
  """(data_dir, a copy of shared_run(**overrides) at `directory`, its CompletedProcess)."""
  data_dir, model_dir, result = shared_run(tmp_path_factory, **overrides)
  shutil.copytree(model_dir, directory)
  return data_dir, str(directory), result

