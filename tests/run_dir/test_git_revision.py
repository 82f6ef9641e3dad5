"""run_record.git_revision: the git commit a run's library comes from, and whether it was edited."""
import subprocess

from tf_ipmssl.run_dir import run_record


def _git(directory, *args):
  return subprocess.run(['git', '-C', str(directory), *args], capture_output=True, text=True,
                        check=True).stdout.strip()


def _commit_all(directory):
  """Commits every file under `directory` that is not ignored; returns the new HEAD."""
  _git(directory, 'add', '.')
  _git(directory, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'one')
  return _git(directory, 'rev-parse', 'HEAD')


def test_source_names_the_commit_and_tracked_edits(tmp_path):
  _git(tmp_path, 'init', '-q')
  package = tmp_path / 'pkg'
  package.mkdir()
  (package / 'a.py').write_text('x = 1\n')
  head = _commit_all(tmp_path)
  assert run_record.git_revision(str(package)) == {'commit': head, 'dirty': False}
  (tmp_path / 'scratch.txt').write_text('untracked files do not count\n')
  assert run_record.git_revision(str(package)) == {'commit': head, 'dirty': False}
  (package / 'a.py').write_text('x = 2\n')
  assert run_record.git_revision(str(package)) == {'commit': head, 'dirty': True}


def test_source_of_a_copy_inside_another_checkout_is_none(tmp_path):
  """A copy installed into a project's (ignored) venv is not that project's commit."""
  _git(tmp_path, 'init', '-q')
  (tmp_path / '.gitignore').write_text('venv/\n')
  _commit_all(tmp_path)
  installed = tmp_path / 'venv' / 'site-packages' / 'pkg'
  installed.mkdir(parents=True)
  (installed / 'a.py').write_text('x = 1\n')
  assert run_record.git_revision(str(installed)) is None


def test_source_outside_a_checkout_is_none(tmp_path):
  assert run_record.git_revision(str(tmp_path)) is None
  assert run_record.git_revision(str(tmp_path / 'missing')) is None
