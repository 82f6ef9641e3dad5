"""The records committer of the study's sweep scripts (studies/sweep_common.sh) in a scratch
git repository: it commits a records folder, and a stale .git/index.lock is an error with
git's message and a non-zero status, not a silent no-op; and the scripts' --commit flag."""
import os
import pathlib
import subprocess

COMMON = pathlib.Path(__file__).resolve().parents[1] / 'sweep_common.sh'


def _git(repo, *args):
  subprocess.run(['git', '-C', str(repo), *args], check=True, capture_output=True)


def _commit(repo):
  script = (f'source {COMMON}\nmessage() {{ echo "Records"; }}\n'
            'commit_records message records')
  return subprocess.run(['bash', '-c', script], cwd=repo, capture_output=True, text=True,
                        check=False)


def test_records_are_committed_and_a_stale_lock_is_an_error(tmp_path):
  repo = tmp_path / 'repo'
  repo.mkdir()
  _git(repo, 'init', '-q')
  _git(repo, 'config', 'user.email', 'a@b')
  _git(repo, 'config', 'user.name', 'a')
  (repo / 'records').mkdir()
  (repo / 'records' / 'metrics.json').write_text('{}')
  done = _commit(repo)
  assert done.returncode == 0, done.stderr
  log = subprocess.run(['git', '-C', str(repo), 'log', '--oneline'], capture_output=True,
                       text=True, check=True).stdout
  assert 'Records' in log
  (repo / 'records' / 'more.json').write_text('{}')
  (repo / '.git' / 'index.lock').write_text('')
  stale = _commit(repo)
  assert stale.returncode == 1
  assert stale.stderr.startswith('error: records not committed: git add records failed: ')
  assert 'index.lock' in stale.stderr
  os.remove(repo / '.git' / 'index.lock')
  # A commit git refuses (here a hook that fails): git's message, status 1.
  hook = repo / '.git' / 'hooks' / 'pre-commit'
  hook.write_text('#!/bin/sh\necho refused by the hook >&2\nexit 1\n')
  hook.chmod(0o755)
  refused = _commit(repo)
  assert refused.returncode == 1
  assert refused.stderr.startswith('error: records not committed: git commit failed: ')
  assert 'refused by the hook' in refused.stderr
  hook.unlink()
  assert _commit(repo).returncode == 0


def test_the_commit_flag_is_read_and_any_other_argument_is_a_usage_error():
  def flag(*args):
    script = f'source {COMMON}\ncommit_flag my/sweep.sh "$@"\necho "COMMIT=$COMMIT"'
    return subprocess.run(['bash', '-c', script, 'bash', *args], capture_output=True,
                          text=True, check=False)
  assert flag('--commit').stdout == 'COMMIT=1\n'
  assert flag().stdout == 'COMMIT=0\n'
  wrong = flag('--comit')
  assert (wrong.returncode, wrong.stdout, wrong.stderr) == (
      2, '', 'usage: my/sweep.sh [--commit]\n')
