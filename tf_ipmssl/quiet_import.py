"""A bin/ program's TensorFlow start-up without TensorFlow's C++ start-up lines.

Loading TensorFlow's shared libraries logs through absl's C++ logging before anything has
initialized it, so TF_CPP_MIN_LOG_LEVEL does not reach those lines: every process that loads
TensorFlow 2.21 with oneDNN on prints, once per library (twice),

  WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
  I0000 00:00:... port.cc:153] oneDNN custom operations are on. You may see slightly ...

before a program's own first line. `drop_startup_lines` makes the first `import tensorflow`
(whichever module does it, whenever) write its stderr to a temporary file and copies back
all of it but those log lines: absl's banner above and the lines of severity INFO (I) and
WARNING (W). Errors (E, F), Python warnings and a traceback come through, after the import.
A program run with --verbosity=1 or more does not call it (command_line.run).

Standard library only: it is set up before TensorFlow is imported.
"""
import contextlib
import importlib.abc
import importlib.util
import os
import re
import sys
import tempfile

# absl's banner before its first C++ log line in a process that never called InitializeLog.
ABSL_BANNER = 'WARNING: All log messages before absl::InitializeLog() is called'
# An absl C++ log line of severity INFO or WARNING, "I1203 14:02:03.123456   4242 file.cc:1] "
# (before absl is initialized its clock reads "I0000 00:00:1796306709.488835   4242 ...").
_INFO_OR_WARNING = re.compile(r'[IW]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [^ \]]+:\d+\] ')


def is_startup_line(line: str) -> bool:
  """Whether `line` is absl's banner or a C++ INFO/WARNING log line (the lines dropped)."""
  return line.startswith(ABSL_BANNER) or bool(_INFO_OR_WARNING.match(line))


@contextlib.contextmanager
def _stderr_captured(keep):
  """File descriptor 2 goes to a temporary file inside; on leaving, the lines for which
  `keep(line)` holds are written to the real stderr (C++ writes to the descriptor, not to
  sys.stderr, so the descriptor is what is redirected)."""
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as captured:
    os.dup2(captured.fileno(), 2)
    try:
      yield
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      captured.seek(0)
      text = captured.read().decode('utf-8', errors='replace')
      kept = [line for line in text.splitlines(keepends=True) if keep(line)]
      if kept:
        sys.stderr.write(''.join(kept))
        sys.stderr.flush()


def _stderr_without_startup_lines():
  """_stderr_captured keeping every line but the start-up lines."""
  return _stderr_captured(lambda line: not is_startup_line(line))


class _QuietTensorFlowFinder(importlib.abc.MetaPathFinder):
  """Finds `tensorflow` once, with the other finders, and runs its import (where the shared
  libraries load and log) with stderr filtered; then leaves the import system."""

  def find_spec(self, fullname, path=None, target=None):  # pylint: disable=unused-argument
    if fullname != 'tensorflow':
      return None
    sys.meta_path.remove(self)
    spec = importlib.util.find_spec(fullname)
    if spec is not None and spec.loader is not None:
      execute = spec.loader.exec_module

      def exec_module(module):
        with _stderr_without_startup_lines():
          execute(module)

      spec.loader.exec_module = exec_module
    return spec


def drop_startup_lines():
  """Makes the first import of TensorFlow in this process drop its C++ start-up lines;
  nothing where TensorFlow is imported already or the finder is in place."""
  if 'tensorflow' in sys.modules:
    return
  if not any(isinstance(finder, _QuietTensorFlowFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _QuietTensorFlowFinder())


def decoder_lines_dropped():
  """File descriptor 2 goes to a temporary file inside, and what was written there is
  dropped (_stderr_captured keeping no line): for decoding image files, whose C libraries
  (libjpeg, libpng) and TensorFlow's decoders write their own lines ('Premature end of JPEG
  data', 'Input file read error') about a damaged file that the caller reports anyway, with
  its name, in one line. Python writes a traceback after the block, to the real stderr."""
  return _stderr_captured(lambda line: False)
