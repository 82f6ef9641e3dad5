"""A bin/ program prints only its own lines: TensorFlow's C++ start-up lines (absl's banner,
"oneDNN custom operations are on", twice) only with --verbosity=1 or more.

The program: bin/train with a gin file that does not exist, which loads TensorFlow (the Python
API) before it finds that out and prints one line, `error: ...`. As a newcomer starts it:
none of TensorFlow's variables set."""
import os
import subprocess
import sys

from tf_ipmssl import programs
from tf_ipmssl import quiet_import

_TENSORFLOW_VARIABLES = ('TF_CPP_MIN_LOG_LEVEL', 'TF_ENABLE_ONEDNN_OPTS')


def _train_without_its_gin_file(tmp_path, *flags):
  env = {k: v for k, v in os.environ.items() if k not in _TENSORFLOW_VARIABLES}
  result = subprocess.run(
      [sys.executable, str(programs.REPO_ROOT / 'bin' / 'train'), f'--model_dir={tmp_path}/run',
       f'--gin_file={tmp_path}/missing.gin', *flags],
      capture_output=True, text=True, timeout=300, env=env, cwd=str(programs.REPO_ROOT))
  assert result.returncode == 1, result.stdout + result.stderr
  return (result.stdout + result.stderr).splitlines()


def test_a_program_prints_only_its_own_line(tmp_path):
  lines = _train_without_its_gin_file(tmp_path)
  assert lines == [f'error: gin file {tmp_path}/missing.gin does not exist (see gin/README.md '
                   'for the list of configs, or `bin/cells`)'], lines


def test_verbosity_shows_tensorflows_start_up_lines(tmp_path):
  lines = _train_without_its_gin_file(tmp_path, '--verbosity=1')
  assert lines[-1].startswith('error: gin file'), lines
  assert any(quiet_import.is_startup_line(line) for line in lines[:-1]), lines


def test_the_start_up_lines_and_no_others_are_dropped():
  assert quiet_import.is_startup_line(
      'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR')
  assert quiet_import.is_startup_line(
      'I0000 00:00:1796306709.488835    6018 port.cc:153] oneDNN custom operations are on.')
  assert quiet_import.is_startup_line(
      'W1203 14:05:27.488859 140531745508224 cpu_feature_guard.cc:227] an old CPU')
  assert not quiet_import.is_startup_line('E0000 00:00:1796306709.488835  6018 x.cc:1] failed')
  assert not quiet_import.is_startup_line('error: gin file x.gin does not exist')
  assert not quiet_import.is_startup_line('Traceback (most recent call last):')
