"""The wall-time split of a bin/train session: each second in one part, the parts adding up
to the session's wall time (a clock set by the test; and a real run's metrics.json)."""
import json
import os

import pytest

from tests.training import runs
from tf_ipmssl.run_dir import wall_time


class _Clock:
  def __init__(self, now):
    self.now = now

  def __call__(self):
    return self.now


def test_each_interval_goes_to_the_part_running_then():
  clock = _Clock(100.0)
  split = wall_time.Split(started=90.0, clock=clock)  # 10 s of start-up before the split.
  clock.now = 103.0
  split.switch('training')
  clock.now = 110.0
  with split.charged_to('evaluation'):
    clock.now = 115.0
    with split.charged_to('checkpoints'):
      clock.now = 115.5
    clock.now = 117.0
  clock.now = 120.0
  split.switch('teardown')
  with split.charged_to('export'):
    clock.now = 124.0
  assert split.read(125.0) == {'startup': 13.0, 'training': 10.0, 'evaluation': 6.5,
                               'checkpoints': 0.5, 'export': 4.0, 'teardown': 1.0}
  assert sum(split.read(125.0).values()) == 125.0 - 90.0


def test_sessions_add_up_part_by_part():
  session = dict.fromkeys(wall_time.PARTS, 1.0)
  before = dict(session, training=5.0)
  assert wall_time.add(before, session) == dict(dict.fromkeys(wall_time.PARTS, 2.0),
                                                training=6.0)
  assert wall_time.add({}, session) == session
  assert wall_time.add(None, session) is None  # An earlier session's split is unknown.


def test_the_process_started_when_ps_says_it_did():
  """Against another reading of the start: ps's elapsed whole seconds since it (etimes)."""
  import subprocess  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  started = wall_time.process_started()
  elapsed = int(subprocess.run(['ps', '-o', 'etimes=', '-p', str(os.getpid())],
                               capture_output=True, text=True, check=True).stdout)
  now = time.time()
  assert started <= now
  # etimes is whole seconds (from /proc/uptime), read a moment before `now`; process_started
  # adds the start's clock ticks to the boot time in whole seconds (/proc/stat's btime):
  # each rounds down by under a second.
  assert now - elapsed - 2.1 <= started <= now - elapsed + 0.1


def test_a_runs_parts_add_up_to_its_wall_time(tmp_path_factory):
  """The test run's tiny run (runs.shared_run): its split has time in every part it went
  through, and the parts add up to the session's wall time (to float rounding: both are read
  at one instant)."""
  model_dir = runs.shared_run(tmp_path_factory)[1]
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  session = metrics['wall_split_this_session']
  assert list(session) == list(wall_time.PARTS)
  assert sum(session.values()) == pytest.approx(metrics['wall_seconds_this_session'], abs=1e-6)
  assert metrics['wall_split'] == session  # One session.
  assert sum(metrics['wall_split'].values()) == pytest.approx(metrics['wall_seconds'], abs=1e-6)
  for part in ('startup', 'training', 'evaluation', 'checkpoints', 'export'):
    assert session[part] > 0, part
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  scalars = event_files.read_scalars(os.path.join(model_dir, 'train'))
  for part, seconds in session.items():
    assert scalars[f'time/{part}_seconds'] == [(4, pytest.approx(seconds, rel=1e-6))], part
