"""bin/export never deletes what it did not write: a directory with a user's files (an earlier
export with a user's file beside it included), the run's own model dir and anything inside
its checkpoints/ or best/ are refused with one line; an earlier export is replaced; a
leftover temporary export that is not ours is refused; an export killed at any instant is
completed by exporting again."""
import os
import signal

import numpy as np
import pytest

from tests.reliability import checks
from tests.training import runs


@pytest.fixture(scope='module')
def finished_run(tmp_path_factory):
  """A copy of the test run's tiny run without an export (runs.shared_run)."""
  return runs.copy_of_shared_run(tmp_path_factory, tmp_path_factory.mktemp('run') / 'model',
                                 **{'train.export_classifier': False})[1]


def _export(model_dir, export_dir, fault=None):
  return runs.run_program('export', f'--model_dir={model_dir}', f'--export_dir={export_dir}',
                          fault=fault)


def _listing(directory):
  return sorted((os.path.relpath(os.path.join(root, n), directory),
                 os.stat(os.path.join(root, n)).st_mtime_ns)
                for root, _, names in os.walk(directory) for n in names)


def test_a_user_file_survives_a_refused_export(finished_run, tmp_path):
  target = tmp_path / 'mine'
  target.mkdir()
  (target / 'notes.txt').write_text('my notes')
  result = _export(finished_run, str(target))
  checks.assert_one_error_line(result, f'refusing to replace {target}: it holds files that are not a tf_ipmssl '
                    'classifier export')
  assert (target / 'notes.txt').read_text() == 'my notes'
  assert os.listdir(target) == ['notes.txt']


def test_the_model_dir_and_its_checkpoint_folders_are_refused(finished_run):
  before = _listing(finished_run)
  checks.assert_one_error_line(_export(finished_run, finished_run), 'it is a run directory')
  for inside in ('checkpoints', 'best', os.path.join('best', 'sub')):
    checks.assert_one_error_line(_export(finished_run, os.path.join(finished_run, inside)),
              f"inside the run's {inside.split(os.sep)[0]}/ folder")
  assert _listing(finished_run) == before


def test_an_earlier_export_is_replaced_and_a_foreign_tmp_refused(finished_run, tmp_path):
  target = str(tmp_path / 'classifier')
  first = _export(finished_run, target)
  assert first.returncode == 0, first.stderr
  again = _export(finished_run, target)
  assert again.returncode == 0, again.stderr
  assert sorted(os.listdir(target)) == ['MODEL_CARD.md', 'assets', 'fingerprint.pb',
                                        'saved_model.pb', 'tf_ipmssl_classifier.json',
                                        'variables']
  assert not os.path.exists(target + '.tmp')
  # A directory called <target>.tmp that an export did not write is not deleted.
  other = tmp_path / 'other'
  (tmp_path / 'other.tmp').mkdir()
  (tmp_path / 'other.tmp' / 'keep.txt').write_text('x')
  checks.assert_one_error_line(_export(finished_run, str(other)), 'was not written by an export')
  assert (tmp_path / 'other.tmp' / 'keep.txt').read_text() == 'x'


EXPORT_FILES = ['MODEL_CARD.md', 'assets', 'fingerprint.pb', 'saved_model.pb',
                'tf_ipmssl_classifier.json', 'variables']


@pytest.mark.parametrize('point', ['export_tmp_created', 'export_written',
                                   'export_old_removed'])
def test_an_export_killed_at_any_instant_is_completed_by_exporting_again(
    finished_run, tmp_path, point):
  """Completed: the same files, the same metadata, and the same answers on fixed images as
  the export before the kill (one checkpoint and one machine: equal bit for bit)."""
  target = str(tmp_path / 'classifier')
  first = _export(finished_run, target)
  assert first.returncode == 0, first.stderr
  images = np.random.default_rng(0).integers(0, 256, [6, 28, 28, 1], dtype=np.uint8)
  before = checks.export_answers(target, images)
  killed = _export(finished_run, target, fault=f'{point}=kill')
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  again = _export(finished_run, target)
  assert again.returncode == 0, again.stderr
  assert sorted(os.listdir(target)) == EXPORT_FILES
  assert not os.path.exists(target + '.tmp')
  checks.assert_same_answers(checks.export_answers(target, images), before)


def test_a_users_file_beside_an_earlier_export_is_kept(finished_run, tmp_path):
  target = tmp_path / 'classifier'
  first = _export(finished_run, str(target))
  assert first.returncode == 0, first.stderr
  (target / 'README.md').write_text('how I use this classifier')
  checks.assert_one_error_line(_export(finished_run, str(target)),
                               f'refusing to replace {target}', 'README.md')
  assert (target / 'README.md').read_text() == 'how I use this classifier'
  assert sorted(os.listdir(target)) == sorted(EXPORT_FILES + ['README.md'])
