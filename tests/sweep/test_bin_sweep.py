"""bin/sweep end to end: --dry_run plans, --tables_only rebuilds tables, and SIGTERM stops a sweep
that has started training, with its trainer."""
import os
import subprocess
import sys

from tests import table_files
from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import table_file

SWEEP = str(cells_lib.REPO_ROOT / 'bin' / 'sweep')


def _sweep(*flags, check=True):
  return subprocess.run([sys.executable, SWEEP, *flags], capture_output=True, text=True,
                        timeout=120, check=check)


def test_dry_run_over_table2(tmp_path):
  root = str(tmp_path / 'sweep')
  result = _sweep('--table=table2', '--dataset=cifar10', '--seeds=3', f'--root={root}',
                  '--dry_run', '--gin_file=gin/presets/cpu_quick.gin')
  lines = [line for line in result.stdout.splitlines() if ' seed ' in line]
  assert len(lines) == 12 * 3
  assert lines[0].startswith('table2/cifar10_gp_f seed 0 [new]: ')
  assert (f'--model_dir={root}/table2/cifar10_gp_f/seed_0 '
          '--gin_file=gin/table2/cifar10_gp_f.gin --gin_file=gin/presets/cpu_quick.gin '
          "'--gin_bindings=train.seed = 0' '--gin_bindings=build_ssl_data.split_seed = 0'"
          ) in lines[0]
  assert '36 run(s): 12 cell(s) x 3 seed(s)' in result.stdout
  assert not os.path.exists(root)  # A dry run writes nothing.
  both = _sweep('--table=table2', '--seeds=0,4', f'--root={root}', '--dry_run')
  assert len([l for l in both.stdout.splitlines() if ' seed ' in l]) == 24 * 2


def test_tables_only(tmp_path):
  root = str(tmp_path / 'sweep')
  for seed, error in enumerate((17.0, 19.0)):
    fake_results.write_run(root, cells_lib.get_cell('table2/cifar10_fisher_f'), seed, error)
  tables_dir = str(tmp_path / 'tables')
  result = _sweep('--tables_only', f'--root={root}', f'--tables_dir={tables_dir}')
  assert '| Ω_F(f) | 18.00 ± 1.41 (n=2) | 17.49 | – | 9.16 |' in result.stdout
  assert sorted(os.listdir(tables_dir)) == ['runs.csv', 'table2.csv', 'table2.md',
                                            'table2.png', 'tables.md']


def test_user_errors(tmp_path):
  result = _sweep(f'--root={tmp_path}', check=False)
  assert result.returncode == 1 and 'choose cells with --cells' in result.stderr
  result = _sweep('--cells=table9/*', f'--root={tmp_path}', check=False)
  assert result.returncode == 1 and 'matches no cell' in result.stderr
  result = _sweep('--table=table2', check=False)
  assert result.returncode == 1 and '--root is required' in result.stderr
  assert 'Traceback' not in result.stderr


def test_a_table_file_dry_run_and_tables(tmp_path):
  """--table_file: its cells over seeds, their gin files from its gin folder; its table from
  the runs; a cell without its gin file is one line before anything runs."""
  path = table_files.write_table(str(tmp_path), name='own_table_sweep')
  root = str(tmp_path / 'own')
  result = _sweep(f'--table_file={path}', '--seeds=3', f'--root={root}', '--workers=2',
                  '--dry_run')
  assert '12 run(s): 4 cell(s) x 3 seed(s)' in result.stdout
  gin = tmp_path.resolve() / 'configs' / 'fashion_mnist_kplus1_1000.gin'
  assert f'--gin_file={gin}' in result.stdout
  result = _sweep(f'--table_file={path}', '--cells=own_table_sweep/*_kplus1_*', '--seeds=1',
                  f'--root={root}', '--dry_run')
  assert '2 run(s): 2 cell(s) x 1 seed(s)' in result.stdout
  table_file.load(path)
  cell = cells_lib.get_cell('own_table_sweep/fashion_mnist_supervised_100')
  for seed, error in enumerate((26.0, 28.0)):
    fake_results.write_run(root, cell, seed, error)
  result = _sweep(f'--table_file={path}', '--tables_only', f'--root={root}')
  assert '| supervised only | 27.00 ± 1.41 (n=2) | – |' in result.stdout
  assert 'warning' not in result.stderr  # Its plot too: error against the label counts.
  assert (tmp_path / 'own' / 'tables' / 'own_table_sweep.png').is_file()
  result = _sweep(f'--table_file={path}', f'--root={root}', '--workers=0', check=False)
  assert result.returncode == 1 and 'workers' in result.stderr
  gin.unlink()
  result = _sweep(f'--table_file={path}', f'--root={root}', '--dry_run', check=False)
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert (f'1 cell(s) lack their gin file, e.g. own_table_sweep/fashion_mnist_kplus1_1000: '
          f'{gin} does not exist') in result.stderr
  # With --train_checkout, a gin file outside the repository is looked for where it is.
  result = _sweep(f'--table_file={path}', f'--root={root}', '--dry_run',
                  f'--train_checkout={cells_lib.REPO_ROOT}', check=False)
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert (f'1 cell(s) lack their gin file, e.g. own_table_sweep/fashion_mnist_kplus1_1000: '
          f'{gin} does not exist') in result.stderr
  result = _sweep('--table=own_table_sweep', f'--root={root}', '--dry_run', check=False)
  assert result.returncode == 1 and 'or describe a table of your own' in result.stderr


def test_sigterm_stops_the_sweep_and_its_trainer_in_one_line(tmp_path):
  """SIGTERM of a local bin/sweep: one line naming the fix, exit status 143, and the trainer
  it started (the PID in its run's train.lock) ends with it."""
  import json  # pylint: disable=g-import-not-at-top
  import signal  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  root = tmp_path / 'root'
  sweep = subprocess.Popen(
      [sys.executable, SWEEP, '--cells=table2/cifar10_fisher_f', '--seeds=1', f'--root={root}',
       '--gin_file=gin/presets/cpu_quick.gin'], stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True)
  lock = root / 'table2' / 'cifar10_fisher_f' / 'seed_0' / 'train.lock'
  trainer = None
  try:
    deadline = time.time() + 120
    while trainer is None:
      assert time.time() < deadline and sweep.poll() is None, sweep.communicate()
      try:
        trainer = json.loads(lock.read_text())['pid']
      except (OSError, ValueError, KeyError):
        time.sleep(0.2)
    sweep.send_signal(signal.SIGTERM)
    _, err = sweep.communicate(timeout=60)
    assert sweep.returncode == 143
    assert err.strip().splitlines()[-1] == (
        'error: the sweep was stopped (SIGTERM) and its runs in progress with it; rerun the '
        'same command to resume them')
    deadline = time.time() + 20
    while time.time() < deadline:
      try:
        os.kill(trainer, 0)
      except ProcessLookupError:
        break
      time.sleep(0.1)
    else:
      raise AssertionError(f'the trainer (PID {trainer}) outlived its sweep')
  finally:
    sweep.kill()
    if trainer:
      try:
        os.kill(trainer, signal.SIGKILL)
      except ProcessLookupError:
        pass
