"""Shared checks of the reliability tests: one `error:` line, a signal mid-run, bin/train in
a mount namespace of its own (a small tmpfs, a read-only bind mount), a file damaged."""
import os
import shlex
import shutil
import signal
import subprocess

import numpy as np
import pytest

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


def export_answers(export_dir, images):
  """(an export's metadata file as text, its outputs on `images`): what a repaired export
  must give again."""
  from tf_ipmssl.serving import runtimes  # pylint: disable=g-import-not-at-top
  with open(os.path.join(export_dir, 'tf_ipmssl_classifier.json')) as f:
    metadata = f.read()
  return metadata, dict(runtimes.open_classifier(export_dir)(images))


def assert_same_answers(actual, expected):
  """Two export_answers, equal bit for bit (one checkpoint on one machine)."""
  assert actual[0] == expected[0]  # tf_ipmssl_classifier.json
  assert actual[1].keys() == expected[1].keys()
  for key in expected[1]:
    np.testing.assert_array_equal(actual[1][key], expected[1][key], err_msg=key)


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


def can_mount():
  """Whether this process may mount in a mount namespace of its own (root, unshare)."""
  if shutil.which('unshare') is None or os.geteuid() != 0:
    return False
  return subprocess.run(['unshare', '-m', 'mount', '-t', 'tmpfs', 'tmpfs', '/mnt'],
                        capture_output=True).returncode == 0


needs_mount = pytest.mark.skipif(not can_mount(), reason='needs root and mount namespaces')


def in_private_mount(setup, model_dir, bindings, fault=None):
  """bin/train after `setup` (mount commands) in a mount namespace of its own."""
  command = shlex.join(runs.train_command(model_dir, bindings))
  return subprocess.run(['unshare', '-m', 'sh', '-c', f'{setup} && exec {command}'],
                        capture_output=True, text=True, env=runs.environment(fault),
                        cwd=str(runs.REPO_ROOT), timeout=600)


def damage(path, how):
  """Damages the file at `path` one way: 'deleted', 'truncated' (its first half kept) or
  'flipped' (four bytes a third of the way in inverted, the size kept)."""
  if how == 'deleted':
    os.remove(path)
    return
  with open(path, 'rb') as f:
    content = bytearray(f.read())
  if how == 'truncated':
    content = content[:len(content) // 2]
  else:  # Bytes flipped, the size kept.
    for index in range(len(content) // 3, len(content) // 3 + 4):
      content[index] ^= 0xFF
  with open(path, 'wb') as f:
    f.write(bytes(content))
