"""Shared plumbing of the bin/ programs: gin flags and user-error handling.

A `UserError` (bad gin binding, missing dataset, impossible split, wrong input) is printed
as one line `error: ...` on stderr with exit status 1 — no traceback; so are a full disk
and a directory that cannot be written. Ctrl-C prints one line and exits with 130. Anything
else is a bug and keeps its traceback.
"""
import errno
import logging as std_logging
import os
import pathlib
import re
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
# TensorFlow turns its oneDNN CPU kernels on by itself only on AVX-512 CPUs; on AVX2 CPUs
# they make a training iteration about 25% faster (docs/performance.md). Numbers then differ
# from oneDNN-off runs in float round-off only. A user's own TF_ENABLE_ONEDNN_OPTS wins; every
# run records the value in its versions.json.
os.environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
from absl import logging
import gin

from tf_ipmssl import errors

REPO_GIN_DIR = pathlib.Path(__file__).resolve().parents[1] / 'gin'


def define_gin_flags():
  """--gin_file and --gin_bindings. absl's --help lists only the main module's flags: the
  program adopts these with `flags.adopt_module_key_flags(command_line)`."""
  flags.DEFINE_multi_string('gin_file', [], 'gin config file(s), applied in order.')
  flags.DEFINE_multi_string('gin_bindings', [],
                            "gin binding(s), e.g. --gin_bindings='train.steps = 100'.")


def _search_paths(gin_files):
  """Where `include` statements are resolved: the repo's gin/ and each file's gin/ root."""
  paths = [str(REPO_GIN_DIR)]
  for name in gin_files:
    for parent in pathlib.Path(name).resolve().parents:
      paths.append(str(parent))
      if parent.name == 'gin':
        break
  return list(dict.fromkeys(paths))


def parse_gin(gin_files, gin_bindings):
  """Parses gin files and bindings; any gin error becomes a ConfigError naming the fix."""
  from tf_ipmssl import configurables  # pylint: disable=g-import-not-at-top,unused-import
  for name in gin_files:
    if not os.path.isfile(name):
      raise errors.ConfigError(f'gin file {name} does not exist (see gin/README.md for the '
                               'list of configs, or `bin/cells`)')
  for path in _search_paths(gin_files):
    gin.add_config_file_search_path(path)
  verbosity, root_level = logging.get_verbosity(), std_logging.root.level
  # gin logs an ERROR for every search path an `include` is not found in before the one
  # where it is; real failures raise. It logs to Python's root logger, which absl's
  # verbosity governs only under absl.app (the programs), not in the Python API.
  logging.set_verbosity(logging.FATAL)
  std_logging.root.setLevel(std_logging.CRITICAL)
  try:
    gin.parse_config_files_and_bindings(gin_files, gin_bindings, finalize_config=False)
  except Exception as e:  # gin raises ValueError, KeyError, SyntaxError, IOError...
    message = str(e).strip().replace('\n', ' ')
    raise errors.ConfigError(
        f'bad gin configuration: {message}. Check the spelling of the binding against the '
        'parameters documented in tf_ipmssl (e.g. `train.steps = 100`).') from None
  finally:
    std_logging.root.setLevel(root_level)
    logging.set_verbosity(verbosity)


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


def run(main):
  """absl app.run with user errors reported in one line and exit status 1 (Ctrl-C: 130)."""
  def wrapped(argv):
    logging.set_verbosity(logging.WARNING)  # TensorFlow's INFO lines drown the progress lines.
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
