"""Both copies of a sweep's record (the root's, the archive's) end with a manifest; a damaged
copy is repaired from the whole one, and a run trains again only where neither is whole."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.reliability import checks
from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import archive
from tf_ipmssl.sweep import plan as plan_lib
from tf_ipmssl.sweep import results as results_lib
from tf_ipmssl.sweep import runner

FAKE_TRAIN = (sys.executable, os.path.join(os.path.dirname(__file__), 'fake_train.py'))
SWEEP = str(cells_lib.REPO_ROOT / 'bin' / 'sweep')
CELL = cells_lib.get_cell('table2/cifar10_fisher_f')
EVENTS = 'eval/events.out.tfevents.1.fake.v2'
EVALUATIONS = {5 * i: 0.5 / (i + 1) for i in range(20)}  # Step -> labeled-set error.


@pytest.fixture(scope='module')
def events(tmp_path_factory):
  """A TensorBoard event file of twenty evaluations' labeled-set error (EVALUATIONS): enough
  records that a file cut at half, or damaged a third of the way in, keeps some whole."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  logdir = str(tmp_path_factory.mktemp('events'))
  writer = tf.summary.create_file_writer(logdir)
  with writer.as_default():
    for step, value in EVALUATIONS.items():
      tf.summary.scalar('labeled_error', value, step=step)
  writer.close()
  (name,) = os.listdir(logdir)
  return os.path.join(logdir, name)


@pytest.fixture
def swept(tmp_path, events, monkeypatch):
  """(root, archive, runs) of a two-seed sweep that trained with the fake trainer (writing a
  whole record, its test error and split seed the run's own) and archived each run; an
  undisturbed copy of both under tmp_path/clean."""
  monkeypatch.setenv('FAKE_TRAIN_EVENTS', events)
  monkeypatch.setenv('FAKE_TRAIN_PER_SEED', '1')
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  runs = plan_lib.make_plan([CELL], (0, 1), root)
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=lambda _: None,
                             archive=store)
  assert [o.status for o in outcomes] == [runner.SUCCEEDED] * 2
  for directory in (root, store):
    shutil.copytree(directory, str(tmp_path / 'clean' / os.path.basename(directory)))
  return root, store, runs


def _tree(directory):
  """{path relative to directory: bytes} of every file under it."""
  files = {}
  for folder, _, names in os.walk(directory):
    for name in names:
      path = os.path.join(folder, name)
      with open(path, 'rb') as f:
        files[os.path.relpath(path, directory)] = f.read()
  return files


def _calls(model_dir):
  with open(os.path.join(model_dir, 'calls.txt')) as f:
    return len(f.readlines())


def test_both_copies_get_a_manifest_written_last_and_whole(tmp_path, events, monkeypatch):
  monkeypatch.setenv('FAKE_TRAIN_EVENTS', events)
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  (run,) = plan_lib.make_plan([CELL], (0,), root)
  replaced = []
  real_replace = os.replace

  def recording_replace(source, target):
    replaced.append((os.fspath(source), os.fspath(target)))
    real_replace(source, target)
  monkeypatch.setattr(os, 'replace', recording_replace)
  runner.run_plan([run], root, program=FAKE_TRAIN, report=lambda _: None, archive=store)
  kept = archive.archived_dir(run, store)
  into_archive = [pair for pair in replaced if pair[1].startswith(kept)]
  assert into_archive[-1] == (os.path.join(kept, 'manifest.json.tmp'),
                              os.path.join(kept, 'manifest.json'))
  assert (os.path.join(run.model_dir, 'manifest.json.tmp'),
          os.path.join(run.model_dir, 'manifest.json')) in replaced
  for directory in (run.model_dir, kept):
    with open(os.path.join(directory, 'manifest.json')) as f:
      listed = json.load(f)['files']
    assert sorted(listed) == archive.record_files(directory)
    assert EVENTS in listed and 'metrics.json' in listed and 'calls.txt' not in listed
    with open(os.path.join(directory, EVENTS), 'rb') as f:
      data = f.read()
    assert listed[EVENTS] == {'size': len(data), 'sha256': hashlib.sha256(data).hexdigest()}
    assert archive.check(directory) == archive.Check(archive.WHOLE)
  assert 'sweep_run.json' in archive.record_files(kept)
  assert not [name for name in os.listdir(kept) if name.endswith('.tmp')]


@pytest.mark.parametrize('how', ['truncated', 'flipped', 'deleted'])
@pytest.mark.parametrize('name', ['metrics.json', 'dataset.json', 'versions.json', EVENTS])
@pytest.mark.parametrize('copy', ['root', 'archive'])
def test_a_damaged_file_is_repaired_from_the_other_copy(swept, tmp_path, copy, name, how):
  root, store, runs = swept
  run = runs[0]
  damaged_dir = run.model_dir if copy == 'root' else archive.archived_dir(run, store)
  path = os.path.join(damaged_dir, *name.split('/'))
  checks.damage(path, how)
  checked = archive.check(damaged_dir)
  assert checked.state == archive.DAMAGED and checked.damaged == (name,)
  reports = []
  assert archive.sync(runs, store, report=reports.append) == (0, 0)
  other = "the archive's copy" if copy == 'root' else "the root's copy"
  assert reports == [f'Repaired {path} from {other}']
  # Nothing is trained again, and both copies equal an undisturbed sweep's, file by file.
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=lambda _: None,
                             archive=store)
  assert [o.status for o in outcomes] == [runner.SKIPPED] * 2
  assert _calls(run.model_dir) == 1
  assert _tree(root) == _tree(str(tmp_path / 'clean' / 'root'))
  assert _tree(store) == _tree(str(tmp_path / 'clean' / 'archive'))
  assert results_lib.collect_cell(root, CELL).errors == (12.5, 13.5)  # Each run its own.


@pytest.mark.parametrize('how', ['truncated', 'flipped', 'deleted'])
@pytest.mark.parametrize('name', ['sweep_run.json', 'manifest.json'])
def test_the_archives_own_files_are_repaired(swept, tmp_path, name, how):
  """The archive copy's sweep_run.json (which the root lacks) and its manifest: rewritten
  from the root's copy, nothing trained, both copies as an undisturbed sweep's."""
  root, store, runs = swept
  kept = archive.archived_dir(runs[0], store)
  checks.damage(os.path.join(kept, name), how)
  reports = []
  archive.sync(runs, store, report=reports.append)
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=lambda _: None,
                             archive=store)
  assert [o.status for o in outcomes] == [runner.SKIPPED] * 2, reports
  assert _calls(runs[0].model_dir) == 1
  assert _tree(root) == _tree(str(tmp_path / 'clean' / 'root'))
  assert _tree(store) == _tree(str(tmp_path / 'clean' / 'archive'))
  assert reports == [f"Repaired {os.path.join(kept, name)} from the root's copy"]


def test_a_root_record_without_a_manifest_gets_one_when_it_repairs_the_archive(swept):
  """A root record written before manifests (none) and a damaged archive copy: the archive is
  repaired from the root, and the root gets its manifest, so that a later change to either
  copy is seen."""
  root, store, runs = swept
  run = runs[0]
  os.remove(os.path.join(run.model_dir, 'manifest.json'))
  assert archive.check(run.model_dir).state == archive.UNVERIFIED
  kept = archive.archived_dir(run, store)
  checks.damage(os.path.join(kept, 'dataset.json'), 'flipped')
  reports = []
  archive.sync(runs, store, report=reports.append)
  assert reports == [f"Repaired {os.path.join(kept, 'dataset.json')} from the root's copy"]
  assert archive.check(run.model_dir) == archive.Check(archive.WHOLE)
  assert archive.check(kept) == archive.Check(archive.WHOLE)
  # A later change to the root's copy is now seen, and repaired from the archive's.
  checks.damage(os.path.join(run.model_dir, 'metrics.json'), 'flipped')
  assert archive.check(run.model_dir).damaged == ('metrics.json',)


def test_a_stray_evaluation_file_is_removed_and_a_damaged_manifest_rewritten(swept, tmp_path):
  root, store, runs = swept
  kept = archive.archived_dir(runs[1], store)
  stray = os.path.join(kept, 'eval', 'events.out.tfevents.0.old.v2')
  shutil.copyfile(os.path.join(kept, *EVENTS.split('/')), stray)
  checks.damage(os.path.join(runs[0].model_dir, 'manifest.json'), 'truncated')
  reports = []
  archive.sync(runs, store, report=reports.append)
  assert reports == [
      f"Repaired {os.path.join(runs[0].model_dir, 'manifest.json')} from the archive's copy",
      f"Removed {stray}: not part of the record (the root's copy has no such file)"]
  assert _tree(root) == _tree(str(tmp_path / 'clean' / 'root'))
  assert _tree(store) == _tree(str(tmp_path / 'clean' / 'archive'))


def test_a_run_whose_copies_are_both_damaged_trains_again(swept):
  root, store, runs = swept
  run = runs[0]
  kept = archive.archived_dir(run, store)
  checks.damage(os.path.join(run.model_dir, 'metrics.json'), 'flipped')
  checks.damage(os.path.join(kept, *EVENTS.split('/')), 'truncated')
  reports = []
  archive.sync(runs, store, report=reports.append)
  assert reports == [
      f'{run.name}: no whole copy of its record ({run.model_dir}/metrics.json, '
      f'{kept}/{EVENTS} damaged); training it again (the root\'s record files moved to '
      f'{run.model_dir}/damaged)']
  assert sorted(os.listdir(os.path.join(run.model_dir, 'damaged'))) == [
      'manifest.json', 'metrics.json']
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=lambda _: None,
                             archive=store)
  assert [o.status for o in outcomes] == [runner.SUCCEEDED, runner.SKIPPED]
  assert _calls(run.model_dir) == 2
  # The rerun's record replaced the archive's: whole, and its eval/ as the root's.
  for directory in (run.model_dir, kept):
    assert archive.check(directory) == archive.Check(archive.WHOLE)
  assert sorted(os.listdir(os.path.join(kept, 'eval'))) == sorted(
      os.listdir(os.path.join(run.model_dir, 'eval')))


def test_a_root_without_a_record_is_not_restored_from_a_damaged_archive(swept, tmp_path):
  root, store, runs = swept
  kept = archive.archived_dir(runs[0], store)
  checks.damage(os.path.join(kept, 'dataset.json'), 'deleted')
  fresh_runs = plan_lib.make_plan([CELL], (0, 1), str(tmp_path / 'fresh'))
  reports = []
  assert archive.sync(fresh_runs, store, report=reports.append) == (0, 1)
  assert reports == [f'{runs[0].name}: no whole copy of its record ({kept}/dataset.json '
                     'damaged); training it again']
  assert runner.run_state(fresh_runs[0].model_dir) == runner.NEW
  assert runner.run_state(fresh_runs[1].model_dir) == runner.FINISHED


def test_a_record_without_a_manifest_is_read_as_before_and_gets_one_when_archived(
    tmp_path, events):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  (run,) = plan_lib.make_plan([CELL], (0,), root)
  fake_results.write_run(root, CELL, 0, 21.5)  # As older sweeps left it: no manifest.
  assert archive.check(run.model_dir) == archive.Check(archive.UNVERIFIED)
  assert archive.sync([run], store, report=print) == (1, 0)
  kept = archive.archived_dir(run, store)
  for directory in (run.model_dir, kept):
    assert archive.check(directory) == archive.Check(archive.WHOLE)
  os.remove(os.path.join(kept, 'manifest.json'))  # An archive written before manifests.
  assert archive.check(kept) == archive.Check(archive.UNVERIFIED)
  assert results_lib.collect_cell(store, CELL).errors == (21.5,)
  (fresh,) = plan_lib.make_plan([CELL], (0,), str(tmp_path / 'fresh'))
  assert archive.sync([fresh], store) == (0, 1)
  assert results_lib.collect_cell(str(tmp_path / 'fresh'), CELL).errors == (21.5,)
  assert archive.check(fresh.model_dir) == archive.Check(archive.WHOLE)
  assert not archive.save(run, store)  # Archived again: now with its manifest.
  assert archive.check(kept) == archive.Check(archive.WHOLE)
  # An unreadable metrics.json is damage even without a manifest.
  os.remove(os.path.join(run.model_dir, 'manifest.json'))
  with open(os.path.join(run.model_dir, 'metrics.json'), 'w') as f:
    f.write('{"finished": tr')
  assert archive.check(run.model_dir) == archive.Check(archive.DAMAGED, ('metrics.json',))
  reports = []
  archive.sync([run], store, report=reports.append)
  assert f'Repaired {run.model_dir}/metrics.json from the archive\'s copy' in reports
  assert results_lib.collect_cell(root, CELL).errors == (21.5,)


def test_rearchiving_replaces_the_evaluation_files_never_adds_to_them(tmp_path, events):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  (run,) = plan_lib.make_plan([CELL], (0,), root)
  fake_results.write_run(root, CELL, 0, 21.5)
  os.makedirs(os.path.join(run.model_dir, 'eval'))
  shutil.copyfile(events, os.path.join(run.model_dir, *EVENTS.split('/')))
  archive.save(run, store)
  # Trained again: the trainer's new evaluation file stands where the old one was.
  os.remove(os.path.join(run.model_dir, *EVENTS.split('/')))
  shutil.copyfile(events, os.path.join(run.model_dir, 'eval', 'events.out.tfevents.2.x.v2'))
  archive.save(run, store)
  kept = archive.archived_dir(run, store)
  assert os.listdir(os.path.join(kept, 'eval')) == ['events.out.tfevents.2.x.v2']
  assert archive.check(kept) == archive.Check(archive.WHOLE)
  curve = results_lib.collect_cell(store, CELL).runs[0]
  assert curve.test_error == 21.5


def test_versions_json_names_no_path_of_the_machine_in_the_archive(tmp_path):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  (run,) = plan_lib.make_plan([CELL], (0,), root)
  fake_results.write_run(root, CELL, 0, 21.5)
  elsewhere = '/old/scratch/table2/cifar10_fisher_f/seed_0'  # Started in a root moved since.
  with open(os.path.join(run.model_dir, 'versions.json'), 'w') as f:
    json.dump({'command': ['bin/train', f'--model_dir={elsewhere}', '--gin_file=x.gin'],
               'resumes': [{'command': ['bin/train', '--model_dir', run.model_dir]}]}, f,
              indent=2)
  archive.save(run, store)
  kept = archive.archived_dir(run, store)
  with open(os.path.join(kept, 'versions.json')) as f:
    text = f.read()
  assert str(tmp_path) not in text and '/old/scratch' not in text
  versions = json.loads(text)
  assert versions['command'][1] == '--model_dir=<root>/table2/cifar10_fisher_f/seed_0'
  assert versions['resumes'][0]['command'][2] == '<root>/table2/cifar10_fisher_f/seed_0'
  (fresh,) = plan_lib.make_plan([CELL], (0,), str(tmp_path / 'fresh'))
  assert archive.restore(fresh, store)
  with open(os.path.join(fresh.model_dir, 'versions.json')) as f:
    restored = json.load(f)
  assert restored['command'][1] == f'--model_dir={fresh.model_dir}'
  assert restored['resumes'][0]['command'][2] == fresh.model_dir


def _fake_checkout(tmp_path):
  """A checkout whose bin/train is the fake trainer (with the cell's gin file)."""
  checkout = tmp_path / 'checkout'
  (checkout / 'bin').mkdir(parents=True)
  (checkout / 'gin' / 'table2').mkdir(parents=True)
  shutil.copyfile(FAKE_TRAIN[1], checkout / 'bin' / 'train')
  shutil.copyfile(cells_lib.REPO_ROOT / CELL.gin_file, checkout / CELL.gin_file)
  return str(checkout)


def _sweep(*flags, env=None):
  return subprocess.run([sys.executable, SWEEP, '--cells=table2/cifar10_fisher_f',
                         '--noplots', *flags], capture_output=True, text=True, timeout=120,
                        env=env)


def test_bin_sweep_repairs_in_one_line_and_a_record_the_archive_refuses_is_one_line(
    tmp_path, events):
  env = dict(os.environ, FAKE_TRAIN_EVENTS=events)
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  flags = ['--seeds=2', f'--root={root}', f'--archive={store}',
           f'--train_checkout={_fake_checkout(tmp_path)}']
  blocked = os.path.join(store, 'table2', 'cifar10_fisher_f', 'seed_0')
  os.makedirs(os.path.dirname(blocked))
  with open(blocked, 'w') as f:  # The archive cannot hold seed 0 (as a read-only disk).
    f.write('in the way')
  result = _sweep(*flags, env=env)
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  why = (f'its record could not be kept in the archive {store} (File exists: {blocked}); '
         'it stays in the root only: make the archive writable, or free space on its disk, '
         'then rerun the same command to archive it')
  assert f'[1/2] {CELL.id} seed 0: {why}' in result.stdout.splitlines()
  assert f'{CELL.id} seed 0: {why}' in result.stdout.splitlines()  # In the summary.
  assert '2 run(s): 2 trained, 0 already finished, 0 failed' in result.stdout
  assert '| Ω_F(f) | 12.50 ± 0.00 (n=2) |' in result.stdout  # The tables are written.
  with open(os.path.join(root, runner.SWEEP_LOG_FILE)) as f:
    logged = [json.loads(line) for line in f]
  assert [entry.get('record_error') for entry in logged] == [why, None]
  kept_1 = os.path.join(store, 'table2', 'cifar10_fisher_f', 'seed_1')
  assert archive.check(kept_1) == archive.Check(archive.WHOLE)

  os.remove(blocked)
  seed_0 = plan_lib.run_dir(root, CELL, 0)
  with open(os.path.join(seed_0, 'metrics.json'), 'w') as f:
    f.write('{"finished": tr')  # Damaged: the other copy is not archived yet.
  with open(os.path.join(kept_1, 'metrics.json'), 'a') as f:
    f.write(' ')
  result = _sweep(*flags, env=env)
  assert result.returncode == 0, result.stderr
  lines = result.stdout.splitlines()
  assert f"Repaired {kept_1}/metrics.json from the root's copy" in lines
  assert (f'{CELL.id} seed 0: no whole copy of its record ({seed_0}/metrics.json damaged); '
          f"training it again (the root's record files moved to {seed_0}/damaged)") in lines
  assert '2 run(s): 1 trained, 1 already finished, 0 failed' in result.stdout
  assert archive.check(blocked) == archive.Check(archive.WHOLE)
  with open(os.path.join(root, runner.SWEEP_LOG_FILE)) as f:
    assert 'record_error' not in json.loads(f.readlines()[-1])


@pytest.mark.parametrize('how', ['truncated', 'flipped'])
def test_readers_name_a_damaged_file_in_one_line_and_read_the_other_runs(swept, capsys, how):
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  root, _, runs = swept
  checks.damage(os.path.join(runs[0].model_dir, 'metrics.json'), how)
  events_1 = os.path.join(runs[1].model_dir, *EVENTS.split('/'))
  checks.damage(events_1, how)
  result = _sweep(f'--root={root}', '--tables_only')
  assert result.returncode == 0 and 'Traceback' not in result.stderr, result.stderr
  (line,) = [line for line in result.stderr.splitlines() if 'metrics.json' in line]
  assert line.startswith(f'warning: {runs[0].model_dir}/metrics.json is damaged and cannot '
                         'be read (') and line.endswith('); read as missing')
  assert '| Ω_F(f) | 13.50 (n=1) |' in result.stdout  # Seed 1's.
  # An evaluation file's damage (TensorFlow's DataLossError) is one line; what precedes it
  # is read.
  capsys.readouterr()
  curves = event_files.read_eval_curves(runs[1].model_dir)
  (line,) = capsys.readouterr().err.splitlines()
  assert line.startswith(f'warning: {events_1} is damaged (')
  # What precedes the damage is read, and nothing else: a prefix of the twenty evaluations.
  points = curves.get('labeled_error', {})
  assert set(curves) == {'labeled_error'} and 0 < len(points) < len(EVALUATIONS)
  assert points == pytest.approx(dict(list(EVALUATIONS.items())[:len(points)]), rel=1e-7)
