"""Shared test setup: quiet TensorFlow, deterministic ops, repository root on sys.path."""
import os
import pathlib
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
  sys.path.insert(0, str(REPO_ROOT))
from tests import program_server  # pylint: disable=g-import-not-at-top,wrong-import-position


def pytest_report_header(config):  # pylint: disable=unused-argument
  """The CPU and the kernel settings the suite computes with, in the header of every report
  (without loading TensorFlow): a failure that hinges on a CPU's rounding then says which."""
  from tf_ipmssl.run_dir import cpu_info  # pylint: disable=g-import-not-at-top
  info = cpu_info.cpuinfo()
  avx512 = 'avx512f' if 'avx512f' in cpu_info.flags(info) else 'no avx512f'
  limit = cpu_info.isa_limit()
  return (f'CPU: {info.get("model name", "?")} (cpu family {info.get("cpu family", "?")}, '
          f'model {info.get("model", "?")}, {avx512}); TF_ENABLE_ONEDNN_OPTS '
          f'{os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset")}; oneDNN ISA limit '
          f'{"=".join(limit) if limit else "none"}')


@pytest.fixture(scope='module', autouse=True)
def _process_state_per_module():
  """Each test file leaves the test process's dtype policy, Grappler options and random
  states as it found them (process_state.preserved, what the API's calls keep): a file that
  trains in-process (trainer.train turns Grappler's arithmetic optimizer off) must not
  change what a later file in the same process computes with or asserts."""
  from tf_ipmssl import process_state  # pylint: disable=g-import-not-at-top
  with process_state.preserved():
    yield


@pytest.fixture(scope='session', autouse=True)
def _program_servers():
  """The program servers this test process started (tests/program_server.py), ended by PID
  when its tests are done, also when they failed."""
  yield
  program_server.stop_servers()
