"""A sweep's archive keeps each finished run's record and restores it into a lost root."""
import json
import os
import re
import subprocess
import sys

import pytest

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from tf_ipmssl.sweep import archive
from tf_ipmssl.sweep import plan as plan_lib
from tf_ipmssl.sweep import results as results_lib
from tf_ipmssl.sweep import runner

FAKE_TRAIN = (sys.executable, os.path.join(os.path.dirname(__file__), 'fake_train.py'))
SWEEP = str(cells_lib.REPO_ROOT / 'bin' / 'sweep')
CELL = cells_lib.get_cell('table2/cifar10_fisher_f')


def _read(directory, name):
  with open(os.path.join(directory, name), 'rb') as f:
    return f.read()


def _finished_run(root, seed, error, bindings=()):
  """A plan run of CELL with a finished record (metrics, dataset, operative config) in root,
  plus a checkpoint file that an archive must not copy."""
  (run,) = plan_lib.make_plan([CELL], (seed,), root, extra_gin_bindings=bindings)
  fake_results.write_run(root, CELL, seed, error, num_labeled=100)
  os.makedirs(os.path.join(run.model_dir, 'checkpoints'))
  with open(os.path.join(run.model_dir, 'checkpoints', 'ckpt-1.index'), 'w') as f:
    f.write('weights')
  return run


def test_save_then_restore_into_a_lost_root(tmp_path):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  run = _finished_run(root, 0, 21.5)
  assert archive.save(run, store)
  kept = archive.archived_dir(run, store)
  assert kept == os.path.join(store, 'table2', 'cifar10_fisher_f', 'seed_0')
  assert sorted(os.listdir(kept)) == [results_lib.ARCHIVED_ON_FILE, 'dataset.json',
                                      archive.MANIFEST_FILE, 'metrics.json',
                                      'operative_config.gin', archive.RUN_FILE]
  with open(os.path.join(kept, archive.RUN_FILE)) as f:
    assert json.load(f) == {'cell': CELL.id, 'seed': 0,
                            'gin_files': ['gin/table2/cifar10_fisher_f.gin'],
                            'gin_bindings': ['train.seed = 0',
                                             'build_ssl_data.split_seed = 0']}
  assert not archive.save(run, store)  # Archived already: saved again, not new.

  fresh = str(tmp_path / 'fresh_root')
  (again,) = plan_lib.make_plan([CELL], (0,), fresh)
  assert runner.run_state(again.model_dir) == runner.NEW
  assert archive.restore(again, store)
  assert runner.run_state(again.model_dir) == runner.FINISHED
  for name in ('metrics.json', 'dataset.json', 'operative_config.gin'):
    assert _read(again.model_dir, name) == _read(run.model_dir, name)
  # The runner skips the restored run, and the tables read it as the original.
  (outcome,) = runner.run_plan([again], fresh, program=FAKE_TRAIN, report=lambda _: None)
  assert outcome.status == runner.SKIPPED
  restored = results_lib.collect_cell(fresh, CELL)
  assert restored.errors == (21.5,) and restored.seeds == (0,)
  # The archive is a root of its own for the tables.
  assert results_lib.collect_cell(store, CELL).errors == (21.5,)


def test_restore_never_writes_into_a_started_run(tmp_path):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  archive.save(_finished_run(root, 0, 21.5), store)
  fresh = str(tmp_path / 'fresh')
  (run,) = plan_lib.make_plan([CELL], (0,), fresh)
  os.makedirs(run.model_dir)  # Started here, not finished: its own checkpoints win.
  assert not archive.restore(run, store)
  assert os.listdir(run.model_dir) == []
  (other,) = plan_lib.make_plan([CELL], (1,), fresh)  # Not archived.
  assert not archive.restore(other, store)
  assert not os.path.exists(other.model_dir)


def test_unfinished_runs_are_not_archived(tmp_path):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  (run,) = plan_lib.make_plan([CELL], (0,), root)
  fake_results.write_run(root, CELL, 0, 30.0, finished=False)
  with pytest.raises(ValueError, match='not finished'):
    archive.save(run, store)
  assert archive.sync([run], store) == (0, 0)
  assert not os.path.exists(store)


def test_an_archive_of_other_settings_is_refused_and_kept(tmp_path):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  run = _finished_run(root, 0, 21.5)
  archive.save(run, store)
  kept = archive.archived_dir(run, store)
  before = {name: _read(kept, name) for name in os.listdir(kept)}

  other_root = str(tmp_path / 'other')
  other = _finished_run(other_root, 0, 40.0, bindings=('ssl.lambda_ce = 3.0',))
  with pytest.raises(errors.ConfigError, match='give this sweep its own --archive'):
    archive.save(other, store)
  with pytest.raises(errors.ConfigError, match="'ssl.lambda_ce = 3.0'"):
    archive.sync([other], store)
  (fresh,) = plan_lib.make_plan([CELL], (0,), str(tmp_path / 'fresh'),
                                extra_gin_bindings=('ssl.lambda_ce = 3.0',))
  with pytest.raises(errors.ConfigError, match='trained with gin files'):
    archive.restore(fresh, store)
  assert not os.path.exists(fresh.model_dir)
  assert {name: _read(kept, name) for name in os.listdir(kept)} == before


def test_a_directory_not_written_as_an_archive_is_refused(tmp_path):
  other_sweep = str(tmp_path / 'other_sweep')  # A sweep root given as --archive by mistake.
  fake_results.write_run(other_sweep, CELL, 0, 55.0)
  kept = _read(plan_lib.run_dir(other_sweep, CELL, 0), 'metrics.json')
  run = _finished_run(str(tmp_path / 'root'), 0, 21.5)
  with pytest.raises(errors.ConfigError, match='did not write'):
    archive.save(run, other_sweep)
  (fresh,) = plan_lib.make_plan([CELL], (0,), str(tmp_path / 'fresh'))
  with pytest.raises(errors.ConfigError, match='did not write'):
    archive.restore(fresh, other_sweep)
  assert _read(plan_lib.run_dir(other_sweep, CELL, 0), 'metrics.json') == kept
  assert not os.path.exists(fresh.model_dir)


def test_sync_archives_finished_runs_and_restores_missing_ones(tmp_path):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  runs = plan_lib.make_plan([CELL], (0, 1, 2), root)
  _finished_run(root, 0, 20.0)
  _finished_run(root, 1, 22.0)
  assert archive.sync(runs, store) == (2, 0)
  assert archive.sync(runs, store) == (0, 0)  # Nothing new.
  fresh_runs = plan_lib.make_plan([CELL], (0, 1, 2), str(tmp_path / 'fresh'))
  assert archive.sync(fresh_runs, store) == (0, 2)
  assert [runner.run_state(r.model_dir) for r in fresh_runs] == [
      runner.FINISHED, runner.FINISHED, runner.NEW]


def test_the_runner_archives_each_run_as_it_finishes(tmp_path):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  runs = plan_lib.make_plan([CELL], (0, 1), root)
  os.makedirs(runs[1].model_dir)
  open(os.path.join(runs[1].model_dir, 'fail'), 'w').close()
  outcomes = runner.run_plan(runs, root, program=FAKE_TRAIN, report=lambda _: None,
                             archive=store)
  assert [o.status for o in outcomes] == [runner.SUCCEEDED, runner.FAILED]
  assert runner.run_state(archive.archived_dir(runs[0], store)) == runner.FINISHED
  assert _read(archive.archived_dir(runs[0], store), 'metrics.json') == _read(
      runs[0].model_dir, 'metrics.json')
  assert not os.path.exists(archive.archived_dir(runs[1], store))


def test_bin_sweep_continues_from_the_archive_alone(tmp_path):
  root, store = str(tmp_path / 'lost'), str(tmp_path / 'archive')
  for seed, error in ((0, 17.0), (1, 19.0)):
    archive.save(_finished_run(root, seed, error), store)
  fresh = str(tmp_path / 'fresh')
  flags = ['--cells=table2/cifar10_fisher_f', '--seeds=2', f'--root={fresh}',
           f'--archive={store}']
  dry = subprocess.run([sys.executable, SWEEP, *flags, '--dry_run'], capture_output=True,
                       text=True, timeout=120, check=True)
  assert 'table2/cifar10_fisher_f seed 1 [archived]: ' in dry.stdout
  assert not os.path.exists(fresh)
  result = subprocess.run([sys.executable, SWEEP, *flags], capture_output=True, text=True,
                          timeout=120, check=True)
  assert f'Archive {store}: 0 finished run(s) archived, 2 restored into the root' in (
      result.stdout)
  assert '2 run(s): 0 trained, 2 already finished, 0 failed' in result.stdout
  assert '| Ω_F(f) | 18.00 ± 1.41 (n=2) |' in result.stdout
  same = subprocess.run([sys.executable, SWEEP, *flags[:3], f'--root={store}',
                         f'--archive={store}'], capture_output=True, text=True, timeout=120)
  assert same.returncode == 1 and 'another directory than --root' in same.stderr


def _eval_scalars(model_dir, content=b'\x00scalars\xff'):
  """An eval/ event file as the trainer writes it (any bytes: the archive copies them)."""
  os.makedirs(os.path.join(model_dir, 'eval'), exist_ok=True)
  path = os.path.join(model_dir, 'eval', 'events.out.tfevents.1.host.1.v2')
  with open(path, 'wb') as f:
    f.write(content)
  return path


def test_the_record_keeps_eval_scalars_and_the_cpu_that_saw_the_run_finish(tmp_path):
  from tf_ipmssl.run_dir import cpu_info  # pylint: disable=g-import-not-at-top
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  run = _finished_run(root, 0, 21.5)
  events = _eval_scalars(run.model_dir)
  os.makedirs(os.path.join(run.model_dir, 'train'))  # Images and training scalars: left.
  archive.save(run, store)
  kept = archive.archived_dir(run, store)
  assert sorted(os.listdir(kept)) == [results_lib.ARCHIVED_ON_FILE, 'dataset.json', 'eval',
                                      archive.MANIFEST_FILE, 'metrics.json',
                                      'operative_config.gin', archive.RUN_FILE]
  assert _read(os.path.join(kept, 'eval'), os.path.basename(events)) == _read(
      os.path.dirname(events), os.path.basename(events))
  with open(os.path.join(kept, results_lib.ARCHIVED_ON_FILE)) as f:
    assert json.load(f) == {'cpu': cpu_info.description()}
  # The CPU as /proc/cpuinfo names it, read here by regular expression: its model name, and
  # for an AVX-512 CPU vendor-family-model (cpu_of's known answers: the test below).
  with open('/proc/cpuinfo') as f:
    text = f.read()
  field = lambda name: re.search(rf'^{name}\s*:\s*(.*?)\s*$', text, re.M).group(1)
  expected = f"{field('model name')} no-avx512f"
  if 'avx512f' in field('flags').split():
    expected = (f"{field('model name')} avx512f "
                f"{field('vendor_id')}-{field('cpu family')}-{field('model')}")
  assert results_lib.cpu_of(kept) == expected
  assert results_lib.collect_cell(store, CELL).runs[0].cpu == expected
  (again,) = plan_lib.make_plan([CELL], (0,), str(tmp_path / 'fresh'))
  assert archive.restore(again, store)
  assert os.listdir(os.path.join(again.model_dir, 'eval')) == [os.path.basename(events)]
  assert results_lib.collect_cell(str(tmp_path / 'fresh'), CELL).runs[0].cpu == (
      results_lib.cpu_of(kept))


@pytest.mark.parametrize('versions, archived_on, expected', [
    ({'numerics': {'cpu': {'model_name': 'AMD EPYC', 'signature':
                           'avx512f AuthenticAMD-25-17 tensorflow-2.21.0'}}}, None,
     'AMD EPYC avx512f AuthenticAMD-25-17'),
    ({'numerics': {'cpu': {'model_name': 'AMD EPYC', 'signature':
                           'no-avx512f tensorflow-2.21.0'}}}, None, 'AMD EPYC no-avx512f'),
    ({'numerics': {'cpu': {'model_name': 'Intel(R) Xeon(R) Processor', 'signature':
                           'avx512f GenuineIntel-6-207 onednn-max-isa=AVX2 tensorflow-2.20.0'}}},
     {'cpu': {'model_name': 'AMD EPYC', 'signature': 'no-avx512f tensorflow-2.21.0'}},
     'Intel(R) Xeon(R) Processor avx512f GenuineIntel-6-207 onednn-max-isa=AVX2'),
    ({'numerics': {}}, {'cpu': {'model_name': 'AMD EPYC', 'signature':
                                'no-avx512f tensorflow-2.21.0'}}, 'AMD EPYC no-avx512f'),
    ({}, None, None),
    (None, {'cpu': {'model_name': None, 'signature': 'no-avx512f tensorflow-2.21.0'}},
     'no-avx512f'),
], ids=['avx512', 'avx2', 'versions_first', 'archived_on', 'neither', 'no_model_name'])
def test_cpu_of_known_answers(tmp_path, versions, archived_on, expected):
  """versions.json's CPU, else archived_on.json's; the TensorFlow version left out."""
  for name, content in (('versions.json', versions),
                        (results_lib.ARCHIVED_ON_FILE, archived_on)):
    if content is not None:
      with open(tmp_path / name, 'w') as f:
        json.dump(content, f)
  assert results_lib.cpu_of(str(tmp_path)) == expected


def test_a_run_that_names_its_cpu_gets_no_archived_on_file_and_its_path_is_left_out(tmp_path):
  root, store = str(tmp_path / 'root'), str(tmp_path / 'archive')
  run = _finished_run(root, 0, 21.5)
  with open(os.path.join(run.model_dir, 'versions.json'), 'w') as f:
    json.dump({'command': ['bin/train', f'--model_dir={run.model_dir}', '--gin_file=x.gin'],
               'numerics': {'cpu': {'model_name': 'Some CPU',
                                    'signature': 'no-avx512f tensorflow-2.21.0'}}}, f, indent=2)
  archive.save(run, store)
  kept = archive.archived_dir(run, store)
  assert results_lib.ARCHIVED_ON_FILE not in os.listdir(kept)
  with open(os.path.join(kept, 'versions.json')) as f:  # No machine path in the record.
    assert json.load(f)['command'] == [
        'bin/train', '--model_dir=<root>/table2/cifar10_fisher_f/seed_0', '--gin_file=x.gin']
  assert results_lib.collect_cell(store, CELL).runs[0].cpu == 'Some CPU no-avx512f'


def _recordless_rows(store, rows):
  """The archive's runs_without_record.csv with (cell, seed, test error) rows."""
  os.makedirs(store, exist_ok=True)
  with open(os.path.join(store, results_lib.RECORDLESS_ROWS_FILE), 'w') as f:
    f.write('cell,seed,test_error,paper_error,dataset,labels,steps,wall_seconds,'
            'labeled_error,final_labeled_error,cpu,record\n')
    for cell_id, seed, error in rows:
      f.write(f'{cell_id},{seed},{error:.4f},17.49,fashion_mnist,100,900,1000,0.00,3.00,'
              'Old CPU,no\n')


def test_a_run_standing_as_a_row_counts_as_finished_and_is_never_trained(tmp_path):
  root, store = str(tmp_path / 'lost'), str(tmp_path / 'archive')
  archive.save(_finished_run(root, 0, 17.0), store)
  _recordless_rows(store, [(CELL.id, 1, 23.25)])
  result = results_lib.collect_cell(store, CELL)
  assert result.seeds == (0, 1) and result.errors == (17.0, 23.25)
  assert [r.has_record for r in result.runs] == [True, False]
  assert result.runs[1].last_labeled_error == 3.0 and result.runs[1].cpu == 'Old CPU'
  rows = results_lib.runs_csv({CELL.id: result}).splitlines()
  assert ',cpu,record,' in rows[0] and ',yes,' in rows[1]
  assert ',Old CPU,no,' in rows[2]
  fresh = str(tmp_path / 'fresh')
  runs = plan_lib.make_plan([CELL], (0, 1), fresh)
  assert [archive.recordless(r, store) for r in runs] == [False, True]
  assert archive.sync(runs, store) == (0, 1)  # Seed 0 restored; seed 1 stays a row.
  assert not os.path.exists(runs[1].model_dir)

  flags = ['--cells=table2/cifar10_fisher_f', '--seeds=2', f'--root={str(tmp_path / "new")}',
           f'--archive={store}']
  dry = subprocess.run([sys.executable, SWEEP, *flags, '--dry_run'], capture_output=True,
                       text=True, timeout=120, check=True)
  assert 'table2/cifar10_fisher_f seed 1 [row without record]: ' in dry.stdout
  result = subprocess.run([sys.executable, SWEEP, *flags], capture_output=True, text=True,
                          timeout=120, check=True)
  assert '1 run(s) stand as rows of its runs_without_record.csv' in result.stdout
  assert '1 run(s): 0 trained, 1 already finished, 0 failed' in result.stdout
  assert not os.path.exists(plan_lib.run_dir(str(tmp_path / 'new'), CELL, 1))
  tabulated = subprocess.run([sys.executable, SWEEP, '--cells=table2/cifar10_fisher_f',
                              f'--root={store}', '--tables_only', '--noplots'],
                             capture_output=True, text=True, timeout=120, check=True)
  assert "| Ω_F(f) | 20.12 ± 4.42 (n=2) |" in tabulated.stdout


def test_runs_train_with_the_train_checkout_s_bin_train(tmp_path):
  checkout = tmp_path / 'checkout'
  (checkout / 'bin').mkdir(parents=True)
  with open(FAKE_TRAIN[1]) as f:
    (checkout / 'bin' / 'train').write_text(f.read())
  root = str(tmp_path / 'root')
  (run,) = plan_lib.make_plan([CELL], (0,), root)
  (outcome,) = runner.run_plan([run], root, report=lambda _: None, checkout=str(checkout))
  assert outcome.status == runner.SUCCEEDED
  with open(os.path.join(run.model_dir, 'calls.txt')) as f:
    assert json.loads(f.read())[0] == f'--model_dir={run.model_dir}'
  refused = subprocess.run([sys.executable, SWEEP, '--cells=table2/cifar10_fisher_f',
                            '--seeds=1', f'--root={root}', f'--train_checkout={checkout}'],
                           capture_output=True, text=True, timeout=120)
  assert refused.returncode == 1
  assert refused.stderr.strip().splitlines() == [
      f'error: --train_checkout={checkout} lacks gin/table2/cifar10_fisher_f.gin: give a '
      'tf_ipmssl checkout (e.g. git worktree add --detach DIR COMMIT); gin files inside this '
      'repository are read from the checkout at the same path, so commit them first']
