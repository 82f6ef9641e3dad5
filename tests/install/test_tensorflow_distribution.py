"""Exactly one TensorFlow distribution per environment: the installed one here, and what
pip resolves for the GPU install (`pip install -e '.[gpu]'`, bin/setup --gpu)."""
import importlib.metadata
import json
import socket
import subprocess
import sys

import pytest

from tf_ipmssl import programs

# Distributions that each install the `tensorflow` package.
TENSORFLOW_DISTRIBUTIONS = {'tensorflow', 'tensorflow-cpu', 'tensorflow-gpu',
                            'tensorflow-intel', 'tensorflow-macos', 'tf-nightly',
                            'tf-nightly-cpu'}


def _normalized(name):
  return name.lower().replace('_', '-')


def test_this_environment_holds_one_tensorflow():
  installed = {_normalized(d.metadata['Name']) for d in importlib.metadata.distributions()}
  assert len(installed & TENSORFLOW_DISTRIBUTIONS) == 1, installed & TENSORFLOW_DISTRIBUTIONS


def _pypi_reachable():
  try:
    socket.create_connection(('pypi.org', 443), timeout=3).close()
    return True
  except OSError:
    return False


@pytest.mark.integration
def test_gpu_install_resolves_to_one_tensorflow_with_cuda(tmp_path):
  """`pip install --dry-run --report` of the gpu extra: tensorflow with its CUDA libraries,
  no tensorflow-cpu (needs PyPI; skipped offline). Integration: half a minute of pip
  resolving on the network, whatever the code does."""
  if not _pypi_reachable():
    pytest.skip('PyPI is not reachable')
  report = tmp_path / 'report.json'
  result = subprocess.run(
      [sys.executable, '-m', 'pip', 'install', '--dry-run', '--ignore-installed', '--quiet',
       '--report', str(report), '.[gpu]'],
      capture_output=True, text=True, timeout=600, cwd=str(programs.REPO_ROOT))
  if result.returncode != 0 and 'NewConnectionError' in result.stderr + result.stdout:
    pytest.skip('PyPI is not reachable')
  assert result.returncode == 0, result.stderr[-3000:]
  resolved = {_normalized(item['metadata']['name'])
              for item in json.loads(report.read_text())['install']}
  assert resolved & TENSORFLOW_DISTRIBUTIONS == {'tensorflow'}
  assert {'nvidia-cudnn-cu12', 'nvidia-cublas-cu12'} <= resolved
