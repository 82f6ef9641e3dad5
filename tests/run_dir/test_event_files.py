"""A run's event files read back: the values written, and a damaged file named in one line
with the values before its damage kept."""
import os

import tensorflow as tf

from tf_ipmssl.run_dir import event_files


def _write(directory, points):
  writer = tf.summary.create_file_writer(directory)
  with writer.as_default():
    for step, value in points:
      tf.summary.scalar('eval/validation_error', value, step=step)
  writer.close()
  (name,) = [n for n in os.listdir(directory) if 'tfevents' in n]
  return os.path.join(directory, name)


def test_the_values_written_are_read_back(tmp_path):
  _write(str(tmp_path / 'eval'), [(50, 30.5), (100, 25.25)])
  assert event_files.read_eval_curves(str(tmp_path)) == {
      'eval/validation_error': {50: 30.5, 100: 25.25}}
  assert event_files.read_eval_curves(str(tmp_path / 'none')) == {}


def test_a_damaged_file_is_one_line_and_the_values_before_it_stay(tmp_path, capsys):
  path = _write(str(tmp_path / 'eval'), [(step, float(step)) for step in range(1, 41)])
  with open(path, 'r+b') as f:  # Flip bytes past the middle: a record's checksum fails.
    size = f.seek(0, 2)
    f.seek(size * 3 // 4)
    chunk = f.read(8)
    f.seek(size * 3 // 4)
    f.write(bytes(b ^ 0xFF for b in chunk))
  curve = event_files.read_eval_curves(str(tmp_path))['eval/validation_error']
  assert 10 < len(curve) < 40
  assert all(curve[step] == float(step) for step in curve)
  assert sorted(curve) == list(range(1, len(curve) + 1))  # The values before the damage.
  lines = capsys.readouterr().err.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith(f'warning: {path} is damaged (')
