"""Shared checks of the reliability tests: one `error:` line, a signal mid-run."""
import signal
import subprocess

from tests.training import runs


def one_error_line(stderr, *fragments):
  """The one `error: ...` line of stderr (no traceback), containing each fragment."""
  assert 'Traceback' not in stderr, stderr
  lines = [l for l in stderr.splitlines() if l.startswith('error: ')]
  assert len(lines) == 1, stderr
  for fragment in fragments:
    assert fragment in lines[0], (fragment, stderr)
  return lines[0]


def assert_one_error_line(result, *fragments, returncode=1):
  assert result.returncode == returncode, result.stdout + result.stderr
  return one_error_line(result.stderr, *fragments)


def signal_mid_run(model_dir, bindings, signum, after_line='step 3/'):
  """Starts bin/train, sends `signum` once a stdout line starts with `after_line`; returns
  (exit status, stderr). The child gets the default SIGINT disposition, whatever this process
  inherited (a suite started from a background job of a non-interactive shell ignores
  SIGINT, and so would the child): the tests are about the trainer, not how the suite was
  launched."""
  process = subprocess.Popen(
      runs.train_command(model_dir, bindings), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      text=True, env=runs.environment(), cwd=str(runs.REPO_ROOT),
      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
  try:
    for line in process.stdout:
      if line.startswith(after_line):
        break
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
  finally:
    if process.poll() is None:
      process.kill()
  return process.returncode, stderr
