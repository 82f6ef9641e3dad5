"""Run-directory files: names, atomic writes, reading what is missing or half-written."""
import subprocess
import sys

import pytest

from tests.training import runs
from tf_ipmssl.run_dir import run_files


def test_json_round_trip_and_missing(tmp_path):
  assert run_files.read_metrics(str(tmp_path)) is None
  run_files.write_metrics(str(tmp_path), {'step': 3, 'best': {'test_error': 12.5}})
  assert run_files.read_metrics(str(tmp_path)) == {'step': 3, 'best': {'test_error': 12.5}}
  assert (tmp_path / run_files.METRICS_FILE).read_text() == (
      '{\n  "step": 3,\n  "best": {\n    "test_error": 12.5\n  }\n}')
  assert not (tmp_path / (run_files.METRICS_FILE + '.tmp')).exists()


def test_unreadable_json(tmp_path, capsys):
  (tmp_path / run_files.METRICS_FILE).write_text('{"step": ')
  assert run_files.read_metrics(str(tmp_path), unreadable_ok=True) is None
  assert run_files.read_metrics(str(tmp_path), unreadable_ok=True) is None
  # A damaged file is named in one line, once; the reader goes on.
  assert capsys.readouterr().err.splitlines() == [
      f'warning: {tmp_path}/metrics.json is damaged and cannot be read (JSONDecodeError: '
      'Expecting value: line 1 column 10 (char 9)); read as missing']
  with pytest.raises(ValueError):
    run_files.read_metrics(str(tmp_path))


def test_imports_no_tensorflow():
  code = ('import sys; import tf_ipmssl.run_dir.run_files; import tf_ipmssl.sweep.tables; '
          'import tf_ipmssl.sweep.results; '
          'print([m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras")])')
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=runs.environment(), cwd=str(runs.REPO_ROOT), check=True)
  assert result.stdout.strip() == '[]'


def test_an_errors_first_line():
  from tf_ipmssl import errors  # pylint: disable=g-import-not-at-top
  assert errors.first_line(ValueError('  Expecting value: line 1\n  more\n')) == \
      'Expecting value: line 1'
  assert errors.first_line(IndexError()) == ''
