"""Every bin/ program answers --help in each documented way of starting it: bin/<program>
with nothing activated (under the checkout's .venv), bin/<program> under an environment's
Python, and the installed ipmssl-<program> command; a Python without the packages and
without .venv says in one line how to set them up."""
import ast
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

from tf_ipmssl import programs

REPO = programs.REPO_ROOT
BASE_PYTHON = pathlib.Path(getattr(sys, '_base_executable', sys.executable))
# What PATH holds with no environment activated.
PLAIN_PATH = os.pathsep.join([str(BASE_PYTHON.parent), '/usr/bin', '/bin'])


def _first_docstring_line(name):
  tree = ast.parse((REPO / 'bin' / name).read_text())
  return ast.get_docstring(tree).splitlines()[0].strip()


def _env(path):
  env = {k: v for k, v in os.environ.items()
         if k not in ('VIRTUAL_ENV', 'PYTHONPATH', 'PYTHONHOME')}
  env['PATH'] = path
  env.pop('TF_IPMSSL_REEXECUTED', None)
  return env


def _check_help(result, name):
  output = result.stdout + result.stderr
  assert result.returncode in (0, 1), output  # absl's --help exits with 1.
  assert 'Traceback' not in output and 'error:' not in output, output
  assert _first_docstring_line(name) in output, output


def test_the_programs_are_the_bin_programs():
  found = sorted(p.name for p in (REPO / 'bin').iterdir()
                 if p.is_file() and p.name != 'setup')
  assert found == sorted(programs.PROGRAMS)


@pytest.mark.parametrize('name', programs.PROGRAMS)
def test_bin_program_help(name):
  """bin/<program> --help as the docs write it: after bin/setup with nothing activated
  (the checkout's .venv), else with this environment's Python first on PATH."""
  if (REPO / '.venv' / 'bin' / 'python').is_file():
    path = PLAIN_PATH
  else:
    path = os.pathsep.join([str(pathlib.Path(sys.executable).parent), PLAIN_PATH])
  result = subprocess.run([str(REPO / 'bin' / name), '--help'], capture_output=True,
                          text=True, timeout=300, cwd=str(REPO), env=_env(path))
  _check_help(result, name)


@pytest.mark.parametrize('name', programs.PROGRAMS)
def test_installed_command_help(name):
  """ipmssl-<program> --help: the console script where this checkout is installed, else
  the call it makes."""
  script = pathlib.Path(sys.executable).parent / f'ipmssl-{name}'
  if script.is_file() and _installed_from() == str(REPO / 'tf_ipmssl'):
    command = [str(script), '--help']
  else:
    command = [sys.executable, '-c', f'from tf_ipmssl import programs; programs.{name}()',
               '--help']
  result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          cwd=str(REPO), env=_env(os.environ['PATH']))
  _check_help(result, name)


def _installed_from():
  """Where this environment's tf_ipmssl is imported from ('' when not installed)."""
  result = subprocess.run(
      [sys.executable, '-c', 'import tf_ipmssl, os; print(os.path.dirname(tf_ipmssl.__file__))'],
      capture_output=True, text=True, cwd='/', timeout=60)
  return result.stdout.strip()


@pytest.fixture
def checkout(tmp_path):
  """A checkout in tmp_path: bin/cells copied, tf_ipmssl and gin linked."""
  (tmp_path / 'bin').mkdir()
  shutil.copy(REPO / 'bin' / 'cells', tmp_path / 'bin' / 'cells')
  for name in ('tf_ipmssl', 'gin'):
    (tmp_path / name).symlink_to(REPO / name)
  return tmp_path


def test_program_outside_any_venv_reexecutes_under_the_checkouts_venv(checkout):
  # The checkout's .venv: a venv that sees this environment's packages through a .pth.
  subprocess.run([str(BASE_PYTHON), '-m', 'venv', '--without-pip', str(checkout / '.venv')],
                 check=True, timeout=120)
  site = subprocess.run(
      [str(checkout / '.venv' / 'bin' / 'python'), '-c',
       'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
      capture_output=True, text=True, check=True).stdout.strip()
  pathlib.Path(site, 'environment.pth').write_text(sysconfig.get_paths()['purelib'] + '\n')
  result = subprocess.run([str(checkout / 'bin' / 'cells'), '--table=table2', '--count'],
                          capture_output=True, text=True, timeout=300, cwd=str(checkout),
                          env=_env(PLAIN_PATH))
  assert result.returncode == 0, result.stderr
  assert 'table2' in result.stdout and 'total' in result.stdout


def test_program_without_packages_or_venv_says_how_to_set_up(checkout):
  result = subprocess.run([str(BASE_PYTHON), str(checkout / 'bin' / 'cells'), '--count'],
                          capture_output=True, text=True, timeout=120, cwd=str(checkout),
                          env=_env(PLAIN_PATH))
  if result.returncode == 0:
    pytest.skip(f'{BASE_PYTHON} has the packages itself')
  assert result.returncode == 1
  (line,) = result.stderr.strip().splitlines()
  assert line.startswith('error: ') and 'run bin/setup' in line
