"""How the bin/ programs start: from a checkout after bin/setup, and as ipmssl-* commands.

`bin/train ...` works right after bin/setup, with no environment activated: a bin/ program
started by a Python outside any virtual environment (its `#!/usr/bin/env python3` finds the
system's) re-executes itself under the checkout's .venv/bin/python. Started by a Python
that lacks the packages (no .venv, or an environment without TensorFlow), it says in one
line how to set them up.

The installed package also provides each program as a console script with the project's
prefix, `ipmssl-<program>` (setup.py's entry_points: `ipmssl-train`, `ipmssl-sweep`, ...),
which runs the checkout's bin/<program> under the environment it is installed in.

Standard library only: this runs before anything else is imported.
"""
import importlib.util
import os
import pathlib
import runpy
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAMS = ('benchmark', 'cells', 'compare_predictions', 'diagnose', 'evaluate', 'export',
            'make_image_folder', 'predict', 'sweep', 'train', 'write_test_images')
# What every program imports; TensorFlow comes from the cpu or gpu extra (BUILD.md).
REQUIRED_MODULES = ('absl', 'gin', 'tensorflow')
# Set in the environment of the re-executed program, so that it never loops.
_REEXECUTED = 'TF_IPMSSL_REEXECUTED'


def in_virtual_environment() -> bool:
  return sys.prefix != sys.base_prefix


def missing_modules():
  return [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]


def use_checkout_venv(script: str):
  """Re-executes `script` (a bin/ program, or a study's script deeper in the checkout) under
  its checkout's .venv, the nearest folder above it with one, when this Python is outside any
  virtual environment; exits with one line when the packages are missing."""
  folders = pathlib.Path(script).resolve().parents
  venv_python = next((folder / '.venv' / 'bin' / 'python' for folder in folders
                      if (folder / '.venv' / 'bin' / 'python').is_file()),
                     folders[1] / '.venv' / 'bin' / 'python')
  if (not in_virtual_environment() and venv_python.is_file()
      and not os.environ.get(_REEXECUTED)):
    os.environ[_REEXECUTED] = '1'
    os.execv(str(venv_python), [str(venv_python), sys.argv[0]] + sys.argv[1:])
  missing = missing_modules()
  if missing:
    sys.exit(f'error: {sys.executable} lacks {", ".join(missing)}: run bin/setup (it '
             "creates .venv, which bin/ programs then use), or pip install -e '.[cpu]' "
             "(or '.[gpu]') in your environment")


def run_program(name: str):
  """Runs the checkout's bin/<name> as `ipmssl-<name>` (its console script)."""
  path = REPO_ROOT / 'bin' / name
  if not path.is_file():
    sys.exit(f'error: ipmssl-{name} runs bin/{name} of a tf_ipmssl checkout, and {path} does '
             'not exist: install the checkout in editable mode (bin/setup, or '
             "pip install -e '.[cpu]')")
  sys.argv[0] = f'ipmssl-{name}'
  runpy.run_path(str(path), run_name='__main__')


def _console_script(name):
  def main():
    run_program(name)
  main.__name__ = main.__qualname__ = name
  main.__doc__ = f'ipmssl-{name}: bin/{name}.'
  return main


(benchmark, cells, compare_predictions, diagnose, evaluate, export, make_image_folder, predict,
 sweep, train, write_test_images) = (_console_script(name) for name in PROGRAMS)

