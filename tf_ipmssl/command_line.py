"""Shared plumbing of the bin/ programs: gin flags and user-error handling (the flags' files
and bindings are parsed by configurables.parse).

A `UserError` (bad gin binding, missing dataset, impossible split, wrong input) is printed
as one line `error: ...` on stderr with exit status 1 — no traceback; so are a full disk
and a directory that cannot be written. Ctrl-C prints one line and exits with 130. Anything
else is a bug and keeps its traceback.

TensorFlow's settings: importing this module, before TensorFlow is imported, sets the
programs' defaults (`TENSORFLOW_DEFAULTS`) where the user has not set them; after, it sets
none, so the environment, which child processes inherit and versions.json shows, never
names settings this process does not compute with. A program's start-up (`run`) keeps
TensorFlow's C++ start-up lines off the terminal (quiet_import.py) unless --verbosity=1 or
more asks for them, which also lets TensorFlow's C++ INFO lines through.
"""
import errno
import os
import re
import sys

from absl import app
from absl import flags
from absl import logging
from tf_ipmssl import errors
from tf_ipmssl import quiet_import

# TensorFlow's settings for the programs, read by TensorFlow when it is imported.
# TF_CPP_MIN_LOG_LEVEL 2: no C++ INFO or WARNING lines. TF_ENABLE_ONEDNN_OPTS 1: TensorFlow
# turns its oneDNN CPU kernels on by itself only on CPUs with AVX512-VNNI, AVX512-BF16 or
# AMX; on AVX2 CPUs they make a
# training step faster (measured in docs/performance.md). Numbers then differ from
# oneDNN-off runs in float round-off only. A user's own value wins; every run writes
# TF_ENABLE_ONEDNN_OPTS to its versions.json.
TENSORFLOW_DEFAULTS = {'TF_CPP_MIN_LOG_LEVEL': '2', 'TF_ENABLE_ONEDNN_OPTS': '1'}
# The log level a program run with --verbosity=1 or more gives TensorFlow: every C++ line.
_VERBOSE_LOG_LEVEL = '0'
# The variables of TENSORFLOW_DEFAULTS this module set (the user had not).
_DEFAULTED = set()


def set_tensorflow_defaults():
  """Sets TENSORFLOW_DEFAULTS where unset, only while TensorFlow is not imported: TensorFlow
  reads them when it loads, so set later they would change nothing here yet tell child
  processes (and versions.json) that this process computes with them (oneDNN on in a child
  whose parent has it off)."""
  if 'tensorflow' in sys.modules:
    return
  for name, value in TENSORFLOW_DEFAULTS.items():
    if name not in os.environ:
      os.environ[name] = value
      _DEFAULTED.add(name)


set_tensorflow_defaults()


def define_gin_flags():
  """--gin_file and --gin_bindings. absl's --help lists only the main module's flags: the
  program adopts these with `flags.adopt_module_key_flags(command_line)`."""
  flags.DEFINE_multi_string('gin_file', [], 'gin config file(s), applied in order.')
  flags.DEFINE_multi_string('gin_bindings', [],
                            "gin binding(s), e.g. --gin_bindings='train.steps = 100'.")


# OSError numbers that are the machine's state, not a bug: full disk, quota, no permission.
_STORAGE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def _one_line(text):
  """text on one line, without TensorFlow's `{{function_node ...}}` prefix."""
  text = re.sub(r'\{\{.*?\}\}\s*', '', str(text))
  return ' '.join(line.strip() for line in text.splitlines() if line.strip())


def _errno(e):
  """e.errno; gin re-raises errors from a configurable as a proxy whose errno is None, but
  whose message still starts with the original's '[Errno N]'."""
  if e.errno is not None:
    return e.errno
  match = re.match(r'\[Errno (\d+)\]', str(e))
  return int(match.group(1)) if match else None


def _storage_error(e):
  """The one-line message of a full disk / unwritable directory error, or None."""
  if isinstance(e, OSError):
    if _errno(e) not in _STORAGE_ERRNOS:
      return None
    return (f'{_one_line(errors.message_of(e))}. Free disk space or use a directory you can '
            'write, then rerun the same command')
  if 'tensorflow' not in sys.modules:  # Only TensorFlow's own errors are left.
    return None
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if isinstance(e, tf.errors.ResourceExhaustedError):
    return (f'out of space or memory: {_one_line(e.message)}. Free disk space (or use a '
            'smaller batch), then rerun the same command to resume')
  if isinstance(e, tf.errors.PermissionDeniedError):
    return (f'permission denied: {_one_line(e.message)}. Use a directory you can write, then '
            'rerun the same command')
  return None


def _verbose() -> bool:
  """Whether the user asked for absl's --verbosity of 1 (DEBUG) or more."""
  return flags.FLAGS['verbosity'].present and flags.FLAGS.verbosity >= 1


def _start_tensorflow_quietly_unless_verbose():
  """A program's start, after its flags are parsed and before TensorFlow is imported: by
  default only the program's own lines (Python INFO logs off: they drown the progress lines;
  TensorFlow's C++ start-up lines dropped); with --verbosity=1 or more, TensorFlow's C++ log
  lines too, unless the user set TF_CPP_MIN_LOG_LEVEL."""
  if _verbose():
    if 'TF_CPP_MIN_LOG_LEVEL' in _DEFAULTED and 'tensorflow' not in sys.modules:
      os.environ['TF_CPP_MIN_LOG_LEVEL'] = _VERBOSE_LOG_LEVEL
    return
  logging.set_verbosity(logging.WARNING)
  if _tensorflow_log_level() >= 2:  # The user's level, or ours, asks for no INFO or WARNING.
    quiet_import.drop_startup_lines()


def _tensorflow_log_level() -> int:
  """TF_CPP_MIN_LOG_LEVEL as TensorFlow reads it (0, every line, where unset or not a number)."""
  try:
    return int(os.environ.get('TF_CPP_MIN_LOG_LEVEL', '0'))
  except ValueError:
    return 0


def run(main):
  """absl app.run with user errors reported in one line and exit status 1 (Ctrl-C: 130)."""
  def wrapped(argv):
    _start_tensorflow_quietly_unless_verbose()
    try:
      return main(argv)
    except errors.UserError as e:
      print(f'error: {errors.message_of(e)}', file=sys.stderr, flush=True)
      sys.exit(getattr(e, 'exit_code', 1))
    except KeyboardInterrupt:
      print('error: interrupted; rerun the same command to resume', file=sys.stderr,
            flush=True)
      sys.exit(130)
    except Exception as e:  # pylint: disable=broad-except
      message = _storage_error(e)
      if message is None:
        raise
      print(f'error: {message}', file=sys.stderr, flush=True)
      sys.exit(1)
  app.run(wrapped)
