"""The runner skips finished runs, (re)starts the others and survives failing ones."""
import json
import os
import sys

import pytest

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import plan as plan_lib
from tf_ipmssl.sweep import runner

FAKE_TRAIN = (sys.executable, os.path.join(os.path.dirname(__file__), 'fake_train.py'))
CELL = cells_lib.get_cell('table2/cifar10_fisher_f')


def _calls(model_dir):
  path = os.path.join(model_dir, 'calls.txt')
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return [json.loads(line) for line in f]


def test_run_states(tmp_path):
  model_dir = str(tmp_path / 'run')
  assert runner.run_state(model_dir) == runner.NEW
  os.makedirs(model_dir)
  assert runner.run_state(model_dir) == runner.PARTIAL
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    f.write('{"finished": fal')  # Half-written.
  assert runner.run_state(model_dir) == runner.PARTIAL
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    json.dump({'finished': True}, f)
  assert runner.run_state(model_dir) == runner.FINISHED


def test_skips_finished_and_runs_unfinished(tmp_path):
  root = str(tmp_path)
  runs = plan_lib.make_plan([CELL], (0, 1, 2), root)
  fake_results.write_run(root, CELL, 0, 20.0, finished=True)
  fake_results.write_run(root, CELL, 1, 30.0, finished=False)  # Interrupted.
  reports = []
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=reports.append)

  assert [o.status for o in outcomes] == [runner.SKIPPED, runner.SUCCEEDED, runner.SUCCEEDED]
  assert _calls(runs[0].model_dir) == []
  for run in runs[1:]:
    (call,) = _calls(run.model_dir)
    assert call == run.arguments()
    assert runner.run_state(run.model_dir) == runner.FINISHED
    with open(os.path.join(run.model_dir, runner.LOG_FILE)) as f:
      assert 'fake training done' in f.read()
  assert 'already finished, skipped' in reports[0]
  assert 'resuming' in reports[1] and 'starting' in reports[3]
  with open(os.path.join(root, runner.SWEEP_LOG_FILE)) as f:
    logged = [json.loads(line) for line in f]
  assert [(r['seed'], r['status']) for r in logged] == [(1, 'succeeded'), (2, 'succeeded')]

  # A second pass has nothing to do.
  again = runner.run_plan(runs, root, program=FAKE_TRAIN, report=reports.append)
  assert [o.status for o in again] == [runner.SKIPPED] * 3
  assert all(len(_calls(run.model_dir)) == 1 for run in runs[1:])


def test_failing_run_is_reported_and_the_sweep_continues(tmp_path):
  root = str(tmp_path)
  runs = plan_lib.make_plan([CELL], (0, 1), root)
  os.makedirs(runs[0].model_dir)
  open(os.path.join(runs[0].model_dir, 'fail'), 'w').close()
  reports = []
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=reports.append)

  assert [o.status for o in outcomes] == [runner.FAILED, runner.SUCCEEDED]
  assert outcomes[0].returncode == 3
  assert 'failed on purpose' in outcomes[0].log_tail
  assert any('FAILED (exit status 3)' in r and 'failed on purpose' in r for r in reports)
  summary = runner.summary(outcomes)
  assert '1 trained' in summary and '1 failed' in summary
  assert 'table2/cifar10_fisher_f seed 0' in summary


def test_missing_program_is_a_failure_not_a_crash(tmp_path):
  (run,) = plan_lib.make_plan([CELL], (0,), str(tmp_path))
  outcome = runner.run_one(run, program=(str(tmp_path / 'no_such_program'),))
  assert outcome.status == runner.FAILED
  assert 'could not start' in outcome.log_tail


def _process(model_dir):
  with open(os.path.join(model_dir, 'process.json')) as f:
    return json.load(f)


def test_workers_run_in_parallel_with_a_share_of_the_cores(tmp_path, monkeypatch):
  monkeypatch.setenv('FAKE_TRAIN_SECONDS', '1.5')
  monkeypatch.delenv('TF_NUM_INTRAOP_THREADS', raising=False)
  monkeypatch.delenv('TF_NUM_INTEROP_THREADS', raising=False)
  monkeypatch.setattr(os, 'cpu_count', lambda: 8)
  root = str(tmp_path)
  runs = plan_lib.make_plan([CELL], (0, 1, 2), root)
  fake_results.write_run(root, CELL, 2, 20.0, finished=True)
  reports = []
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=reports.append,
                             workers=2)

  # Outcomes in plan order; the two unfinished runs overlapped in time.
  assert [o.run.seed for o in outcomes] == [0, 1, 2]
  assert [o.status for o in outcomes] == [runner.SUCCEEDED, runner.SUCCEEDED, runner.SKIPPED]
  first, second = (_process(run.model_dir) for run in runs[:2])
  assert first['start'] < second['end'] and second['start'] < first['end']
  assert first['intra'] == first['inter'] == '4'  # 8 cores / 2 workers.
  assert sum('finished in' in r for r in reports) == 2
  with open(os.path.join(root, runner.SWEEP_LOG_FILE)) as f:
    assert sorted(json.loads(line)['seed'] for line in f) == [0, 1]


def test_one_worker_leaves_threads_to_tensorflow(tmp_path, monkeypatch):
  monkeypatch.delenv('TF_NUM_INTRAOP_THREADS', raising=False)
  (run,) = plan_lib.make_plan([CELL], (0,), str(tmp_path))
  runner.run_plan([run], str(tmp_path), program=FAKE_TRAIN, report=lambda _: None)
  assert _process(run.model_dir)['intra'] is None
  assert runner.threads_per_run(1) is None
  monkeypatch.setattr(os, 'cpu_count', lambda: 2)
  assert runner.threads_per_run(4) == 1  # Never fewer than one thread.


def test_a_record_that_cannot_be_kept_is_reported_at_once_and_stops_the_sweep(
    tmp_path, monkeypatch):
  root = str(tmp_path)
  runs = plan_lib.make_plan([CELL], (0, 1, 2), root)

  def unarchivable(run, archive):
    raise ImportError(f'no module for {run.name}')
  monkeypatch.setattr(runner.archive_lib, 'save', unarchivable)
  reports = []
  with pytest.raises(runner.RecordError, match='seed 0: its record could not be kept'):
    runner.run_plan(runs, root, program=FAKE_TRAIN, report=reports.append,
                    archive=str(tmp_path / 'archive'))
  # Seed 0 trained and its failure was reported as it happened; seeds 1 and 2 never started.
  assert any('seed 0: its record could not be kept (ImportError' in r for r in reports)
  assert _calls(runs[0].model_dir) and not _calls(runs[1].model_dir)
  assert not _calls(runs[2].model_dir)
  assert not any('seed 1: starting' in r for r in reports)


def test_a_killed_run_says_so(tmp_path):
  root = str(tmp_path)
  (run,) = plan_lib.make_plan([CELL], (0,), root)
  os.makedirs(run.model_dir)
  open(os.path.join(run.model_dir, 'kill'), 'w').close()
  reports = []
  (outcome,) = runner.run_plan([run], root, program=FAKE_TRAIN, report=reports.append)
  assert outcome.status == runner.FAILED and outcome.returncode == -9
  assert any('FAILED (killed by signal 9 (SIGKILL)) after' in r for r in reports)
  assert (f'{run.name}: killed by signal 9 (SIGKILL) (exit status -9; log: '
          in runner.summary([outcome]))


_DRIVER = """
import sys
from tests.sweep import test_runner
from tf_ipmssl.sweep import plan as plan_lib, runner
runs = plan_lib.make_plan([test_runner.CELL], (0, 1), sys.argv[1])
runner.run_plan(runs, sys.argv[1], program=test_runner.FAKE_TRAIN, workers=int(sys.argv[2]))
"""


@pytest.mark.parametrize('workers', [1, 2])
def test_a_killed_sweep_takes_its_runs_with_it(tmp_path, workers):
  """kill -9 of the sweep's process: no run trains on alone (each would hold its run lock
  against the rerun and write into its log)."""
  import signal  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  root = str(tmp_path)
  runs = plan_lib.make_plan([CELL], (0, 1), root)
  env = dict(os.environ, FAKE_TRAIN_SECONDS='120',
             PYTHONPATH=str(cells_lib.REPO_ROOT) + os.pathsep + os.environ.get('PYTHONPATH', ''))
  driver = subprocess.Popen([sys.executable, '-c', _DRIVER, root, str(workers)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  pid_files = [os.path.join(r.model_dir, 'pid') for r in runs[:workers]]
  pids = []
  try:
    deadline = time.time() + 60
    while not all(os.path.exists(p) and open(p).read() for p in pid_files):
      assert time.time() < deadline and driver.poll() is None
      time.sleep(0.1)
    pids = [int(open(p).read()) for p in pid_files]
    driver.kill()
    driver.wait()
    deadline = time.time() + 20
    alive = pids
    while alive and time.time() < deadline:
      time.sleep(0.1)
      alive = []
      for pid in pids:
        try:
          os.kill(pid, 0)
          alive.append(pid)
        except ProcessLookupError:
          pass
    assert not alive, f'runs still training after their sweep was killed: {alive}'
  finally:
    driver.kill()
    for pid in pids:
      try:
        os.kill(pid, signal.SIGKILL)
      except ProcessLookupError:
        pass


def test_an_archive_that_refuses_a_record_is_one_line_and_the_other_runs_go_on(
    tmp_path, monkeypatch):
  import errno  # pylint: disable=g-import-not-at-top
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  runs = plan_lib.make_plan([CELL], (0, 1), root)
  save = runner.archive_lib.save

  def read_only_for_seed_0(run, archive):
    if run.seed == 0:
      raise OSError(errno.EROFS, 'Read-only file system', os.path.join(archive, 'table2'))
    return save(run, archive)
  monkeypatch.setattr(runner.archive_lib, 'save', read_only_for_seed_0)
  reports = []
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=reports.append,
                             archive=store)
  assert [o.status for o in outcomes] == [runner.SUCCEEDED, runner.SUCCEEDED]
  why = (f'its record could not be kept in the archive {store} (Read-only file system: '
         f'{store}/table2); it stays in the root only: make the archive writable, or free '
         'space on its disk, then rerun the same command to archive it')
  assert outcomes[0].record_error == why and not outcomes[1].record_error
  assert f'[1/2] {CELL.id} seed 0: {why}' in reports
  assert runner.summary(outcomes).splitlines()[-1] == f'{CELL.id} seed 0: {why}'
  assert runner.run_state(runner.archive_lib.archived_dir(runs[1], store)) == runner.FINISHED
  with open(os.path.join(root, runner.SWEEP_LOG_FILE)) as f:
    assert [json.loads(line).get('record_error') for line in f] == [why, None]
