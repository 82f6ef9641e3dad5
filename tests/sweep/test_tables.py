"""Tables laid out as the paper's, from synthetic metrics.json files with known errors."""
import csv
import io
import json
import math
import os

import pytest

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import results as results_lib
from tf_ipmssl.sweep import tables


@pytest.fixture
def table1_root(tmp_path):
  """Fisher K+1 on CIFAR-10: seeds 0-2 finished (10, 12, 14) and seed 3 interrupted;
  Fisher plain on SVHN: one run without a validation split (final error 20)."""
  root = str(tmp_path / 'sweep')
  kplus1 = cells_lib.get_cell('table1/cifar10_fisher_kplus1')
  for seed, error in enumerate((10.0, 12.0, 14.0)):
    fake_results.write_run(root, kplus1, seed, error)
  fake_results.write_run(root, kplus1, 3, 50.0, finished=False)
  fake_results.write_run(root, cells_lib.get_cell('table1/svhn_fisher_plain'), 0, 20.0,
                         best=False)
  return root


def test_run_error_prefers_best_validation():
  assert results_lib.run_error({'best': {'test_error': 11.0}, 'final': {'test_error': 9.0}}) == 11.0
  assert results_lib.run_error({'best': {'test_error': None}, 'final': {'test_error': 9.0}}) == 9.0
  assert results_lib.run_error({'final': {'test_error': None}}) is None


def test_collect_mean_std_n(table1_root):
  results = results_lib.collect(table1_root, cells_lib.select_cells(tables=['table1']))
  kplus1 = results['table1/cifar10_fisher_kplus1']
  assert kplus1.errors == (10.0, 12.0, 14.0) and kplus1.seeds == (0, 1, 2)
  assert kplus1.n == 3 and kplus1.unfinished == 1
  assert kplus1.mean == pytest.approx(12.0)
  assert kplus1.std == pytest.approx(2.0)  # Sample std of 10, 12, 14.
  assert kplus1.text == '12.00 ± 2.00 (n=3)'
  plain = results['table1/svhn_fisher_plain']
  assert (plain.n, plain.mean, plain.std, plain.text) == (1, 20.0, None, '20.00 (n=1)')
  assert results['table1/cifar10_sobolev_plain'].text == '–'
  assert [t.name for t in tables.tables_with_results(results)] == ['table1']


def _markdown_rows(text):
  """{row label: [cell texts]} of a markdown table."""
  lines = [line for line in text.splitlines() if line.startswith('|')]
  rows = {}
  for line in lines[2:]:  # After the header and the separator.
    parts = [p.strip() for p in line.strip().strip('|').split('|')]
    rows[parts[0]] = parts[1:]
  return rows


def test_markdown_has_the_paper_layout(table1_root):
  table = cells_lib.TABLES['table1']
  results = results_lib.collect(table1_root, cells_lib.select_cells(tables=['table1']))
  text = tables.markdown_table(table, results)
  header = [line for line in text.splitlines() if line.startswith('|')][0]
  assert header == ('| IPM | CIFAR-10 (4k) plain ⟨v,Φ(x)⟩ | paper | CIFAR-10 (4k) K+1 | paper | '
                    'CIFAR-10 (4k) K+1, f+^H | paper | SVHN (1k) plain ⟨v,Φ(x)⟩ | paper | '
                    'SVHN (1k) K+1 | paper | SVHN (1k) K+1, f+^H | paper |')
  rows = _markdown_rows(text)
  assert list(rows) == ['WGAN clip', 'WGAN-GP', 'Fisher', 'Sobolev', 'Fisher + Sobolev']
  assert rows['Fisher'] == ['–', '18.95 ± 0.32', '12.00 ± 2.00 (n=3)', '17.82 ± 0.43',
                            '–', '17.12 ± 0.11', '20.00 (n=1)', '15.59 ± 0.67',
                            '–', '9.46 ± 0.32', '–', '11.93 ± 0.26']
  # WGAN clip has no K+1 cells: both columns empty.
  assert rows['WGAN clip'] == ['–', '40.85', '', '', '', '', '–', '28.65', '', '', '', '']
  assert '1 unfinished run(s) not counted' in text
  assert 'not comparable' not in text


def test_markdown_flags_runs_on_another_dataset(tmp_path):
  root = str(tmp_path)
  cell = cells_lib.get_cell('table2/svhn_gp_f')
  fake_results.write_run(root, cell, 0, 30.0, dataset='fashion_mnist')
  results = results_lib.collect(root, [cell])
  text = tables.markdown_table(cells_lib.TABLES['table2'], results)
  assert 'trained on fashion_mnist' in text and 'not comparable' in text
  assert _markdown_rows(text)['Ω_GP(f)'] == ['–', '49.28', '30.00 (n=1)', '34.05']


def test_csv_has_the_paper_layout(table1_root):
  results = results_lib.collect(table1_root, cells_lib.select_cells(tables=['table1']))
  rows = list(csv.DictReader(io.StringIO(tables.csv_table(cells_lib.TABLES['table1'],
                                                          results))))
  assert [r['IPM'] for r in rows] == ['WGAN clip', 'WGAN-GP', 'Fisher', 'Sobolev',
                                      'Fisher + Sobolev']
  fisher = rows[2]
  assert float(fisher['CIFAR-10 (4k) K+1 mean']) == 12.0
  assert float(fisher['CIFAR-10 (4k) K+1 std']) == 2.0
  assert fisher['CIFAR-10 (4k) K+1 n'] == '3'
  assert fisher['CIFAR-10 (4k) K+1 paper'] == '17.82'
  assert fisher['CIFAR-10 (4k) K+1 paper std'] == '0.43'
  assert (fisher['SVHN (1k) plain ⟨v,Φ(x)⟩ mean'], fisher['SVHN (1k) plain ⟨v,Φ(x)⟩ std'],
          fisher['SVHN (1k) plain ⟨v,Φ(x)⟩ n']) == ('20.0000', '', '1')
  assert (fisher['CIFAR-10 (4k) plain ⟨v,Φ(x)⟩ mean'],
          fisher['CIFAR-10 (4k) plain ⟨v,Φ(x)⟩ n']) == ('', '0')
  assert rows[0]['CIFAR-10 (4k) K+1 paper'] == ''  # WGAN clip K+1: no cell.
  assert rows[0]['SVHN (1k) plain ⟨v,Φ(x)⟩ paper std'] == ''  # 28.65 has no std.


def test_runs_csv_wall_time_sums_the_sessions(tmp_path):
  """runs.csv's wall time is metrics.json's `wall_seconds` (all sessions); a run written
  before that key existed gives its last session's."""
  root = str(tmp_path / 'sweep')
  cell = cells_lib.get_cell('table1/cifar10_fisher_kplus1')
  for seed, wall in ((0, {'wall_seconds': 300.4, 'wall_seconds_this_session': 100.0}),
                     (1, {'wall_seconds_this_session': 50.2})):
    path = os.path.join(fake_results.write_run(root, cell, seed, 10.0), 'metrics.json')
    with open(path) as f:
      metrics = json.load(f)
    with open(path, 'w') as f:
      json.dump({**metrics, **wall}, f)
  rows = list(csv.DictReader(io.StringIO(results_lib.runs_csv(results_lib.collect(root, [cell])))))
  assert [(r['seed'], r['wall_seconds']) for r in rows] == [('0', '300'), ('1', '50')]


def test_runs_csv_carries_the_wall_time_split(tmp_path):
  """Each run's wall time by part (metrics.json's `wall_split`), blank for a run without
  one, read back the same."""
  root = str(tmp_path / 'sweep')
  cell = cells_lib.get_cell('table1/cifar10_fisher_kplus1')
  split = {'startup': 12.5, 'training': 200.0, 'evaluation': 40.25, 'checkpoints': 3.0,
           'export': 5.0, 'teardown': 0.5}
  path = os.path.join(fake_results.write_run(root, cell, 0, 10.0), 'metrics.json')
  with open(path) as f:
    metrics = json.load(f)
  with open(path, 'w') as f:
    json.dump({**metrics, 'wall_seconds': 261.25, 'wall_split': split}, f)
  fake_results.write_run(root, cell, 1, 11.0)
  text = results_lib.runs_csv(results_lib.collect(root, [cell]))
  rows = list(csv.DictReader(io.StringIO(text)))
  columns = ['startup_seconds', 'training_seconds', 'evaluation_seconds',
             'checkpoints_seconds', 'export_seconds', 'teardown_seconds']
  assert [[r[c] for c in columns] for r in rows] == [
      ['12.5', '200.0', '40.2', '3.0', '5.0', '0.5'], [''] * 6]
  path = tmp_path / 'runs.csv'
  path.write_text(text)
  read = results_lib.read_runs_csv(str(path))[cell.id]
  assert [r.wall_split for r in read.runs] == [(12.5, 200.0, 40.2, 3.0, 5.0, 0.5), None]


def test_runs_csv_has_the_labeled_errors_and_the_cpu(tmp_path):
  """Each run's labeled-set error at its best validation step and at the end, its last
  evaluation's test error, and the CPU of versions.json; blank for a run that did not
  record them."""
  root = str(tmp_path / 'sweep')
  cell = cells_lib.get_cell('table2/cifar10_sobolev_f')
  new = fake_results.write_run(root, cell, 0, 30.0)
  with open(os.path.join(new, 'metrics.json')) as f:
    metrics = json.load(f)
  metrics['best']['labeled_error'], metrics['final']['labeled_error'] = 45.0, 12.5
  metrics['final']['test_error'] = 41.25
  with open(os.path.join(new, 'metrics.json'), 'w') as f:
    json.dump(metrics, f)
  with open(os.path.join(new, 'versions.json'), 'w') as f:
    json.dump({'numerics': {'cpu': {'model_name': 'Some CPU',
                                    'signature': 'avx512f Vendor-6-7 tensorflow-2.21.0'}}}, f)
  fake_results.write_run(root, cell, 1, 31.0)
  results = results_lib.collect(root, [cell])
  assert [r.labeled_error for r in results[cell.id].runs] == [45.0, None]
  # The reported error stays the best step's; the last evaluation's beside it.
  assert [(r.test_error, r.last_test_error) for r in results[cell.id].runs] == [
      (30.0, 41.25), (31.0, 99.0)]
  rows = list(csv.DictReader(io.StringIO(results_lib.runs_csv(results))))
  assert [(r['labeled_error'], r['final_labeled_error'], r['final_test_error'], r['cpu'])
          for r in rows] == [('45.00', '12.50', '41.25', 'Some CPU avx512f Vendor-6-7'),
                             ('', '', '99.00', '')]
  # Read back: the same numbers per cell and seed.
  path = tmp_path / 'runs.csv'
  path.write_text(results_lib.runs_csv(results))
  read = results_lib.read_runs_csv(str(path))[cell.id]
  assert read.cell == cell and read.seeds == (0, 1) and read.errors == (30.0, 31.0)
  assert [(r.labeled_error, r.last_labeled_error, r.last_test_error, r.cpu, r.steps)
          for r in read.runs] == [(45.0, 12.5, 41.25, 'Some CPU avx512f Vendor-6-7', 10),
                                  (None, None, 99.0, None, 10)]


def test_read_runs_csv_of_the_committed_table1():
  """The committed miniature Table 1 (written before runs.csv had labeled errors)."""
  path = os.path.join(os.path.dirname(__file__), '..', '..', 'docs', 'results',
                      'table1_fashion_mnist_100', 'runs.csv')
  results = results_lib.read_runs_csv(path)
  assert len(results) == 14 and all(r.n == 3 for r in results.values())
  baseline = results['appendix_c/cifar10_none_4k']
  assert baseline.mean == pytest.approx(31.35, abs=0.005)


def test_write_tables_and_plots(tmp_path):
  root = str(tmp_path / 'sweep')
  errors = {'1k': (21.0, 23.0), '4k': (16.0, 17.0)}
  for column, values in errors.items():
    cell = cells_lib.get_cell(f'appendix_a/cifar10_fisher_sobolev_none_{column}')
    for seed, error in enumerate(values):
      fake_results.write_run(root, cell, seed, error)
  fake_results.write_run(root, cells_lib.get_cell('appendix_c/svhn_none_all'), 4, 4.0,
                         num_labeled=None)
  results = results_lib.collect(root, cells_lib.all_cells())
  out = str(tmp_path / 'tables')
  written = tables.write_tables(results, out)
  assert sorted(os.path.basename(p) for p in written) == [
      'appendix_a.csv', 'appendix_a.md', 'appendix_c.csv', 'appendix_c.md', 'runs.csv',
      'tables.md']
  runs = list(csv.DictReader(open(os.path.join(out, 'runs.csv'))))
  assert [(r['cell'], r['seed'], float(r['test_error'])) for r in runs] == [
      ('appendix_a/cifar10_fisher_sobolev_none_1k', '0', 21.0),
      ('appendix_a/cifar10_fisher_sobolev_none_1k', '1', 23.0),
      ('appendix_a/cifar10_fisher_sobolev_none_4k', '0', 16.0),
      ('appendix_a/cifar10_fisher_sobolev_none_4k', '1', 17.0),
      ('appendix_c/svhn_none_all', '4', 4.0)]
  # The label count from each run's operative config ('all' for None; '' when unrecorded).
  assert [r['labels'] for r in runs] == ['', '', '', '', 'all']
  rows = _markdown_rows(open(os.path.join(out, 'appendix_a.md')).read())
  assert rows['Fisher + Sobolev, no norm (n_c = 1)'] == [
      f'22.00 ± {math.sqrt(2):.2f} (n=2)', '20.14 ± 0.21', '–', '17.38 ± 0.10',
      '16.50 ± 0.71 (n=2)', '15.77 ± 0.19', '–', '14.20 ± 0.08']
  pytest.importorskip('matplotlib')
  from tf_ipmssl.sweep import plots  # pylint: disable=g-import-not-at-top
  pngs = plots.plot_tables(results, out)
  assert [os.path.basename(p) for p in pngs] == ['appendix_a.png', 'appendix_c.png']
  for path in pngs:
    with open(path, 'rb') as f:
      assert f.read(8) == b'\x89PNG\r\n\x1a\n'


OWN_TABLE = cells_lib.Table(
    name='own_table_layout', title='A table of your own: 1000 labels, test error %',
    rows=(('supervised', 'supervised only (CE, 600 updates)'), ('kplus1_gp_f', 'K+1, Ω_GP(f)'),
          ('kplus1_sobolev_f', 'K+1, Ω_S(f)')),
    columns=(('fashion_mnist', '', 'Fashion-MNIST (1k)'),), row_header='critic, constraints',
    has_paper=False)


def test_a_table_of_your_own_shows_ours_without_a_paper_column(tmp_path):
  root = str(tmp_path / 'own')
  cells_lib.register_table(OWN_TABLE)
  supervised = cells_lib.get_cell('own_table_layout/fashion_mnist_supervised')
  gp = cells_lib.get_cell('own_table_layout/fashion_mnist_kplus1_gp_f')
  for seed, error in enumerate((30.0, 27.0, 24.0)):
    fake_results.write_run(root, supervised, seed, error)
  fake_results.write_run(root, gp, 1, 40.0, num_labeled=1000)
  results = results_lib.collect(root, cells_lib.select_cells(tables=['own_table_layout']))
  assert tables.tables_with_results(results) == [OWN_TABLE]

  text = tables.markdown_table(OWN_TABLE, results)
  assert 'paper' not in text.split('\n')[2]  # The header row.
  rows = _markdown_rows(text)
  assert rows['supervised only (CE, 600 updates)'] == ['27.00 ± 3.00 (n=3)']
  assert rows['K+1, Ω_GP(f)'] == ['40.00 (n=1)']
  assert rows['K+1, Ω_S(f)'] == ['–']
  csv_rows = list(csv.DictReader(io.StringIO(tables.csv_table(OWN_TABLE, results))))
  assert list(csv_rows[0]) == ['critic, constraints', 'Fashion-MNIST (1k) mean',
                               'Fashion-MNIST (1k) std', 'Fashion-MNIST (1k) n']
  assert (csv_rows[0]['Fashion-MNIST (1k) mean'], csv_rows[0]['Fashion-MNIST (1k) std']) == (
      '27.0000', '3.0000')
  runs = list(csv.DictReader(io.StringIO(results_lib.runs_csv(results))))
  assert {r['paper_error'] for r in runs} == {''} and len(runs) == 4
  assert [r['labels'] for r in runs] == ['', '', '', '1000']
  pytest.importorskip('matplotlib')
  from tf_ipmssl.sweep import plots  # pylint: disable=g-import-not-at-top
  (png,) = plots.plot_tables(results, str(tmp_path / 'tables'))
  assert os.path.basename(png) == 'own_table_layout.png'


def test_per_class_tables_of_runs_with_per_class_results(tmp_path):
  """class_errors.csv has a run's balanced error and each class's error at its reported step;
  class_errors.md their means per cell over the runs that have them; neither is written where
  no run has per-class results (as for the committed records)."""
  root = str(tmp_path / 'sweep')
  cell = cells_lib.get_cell('table1/cifar10_fisher_kplus1')
  fake_results.write_run(root, cell, 0, 10.0, class_errors={'cat': 20.0, 'dog': 0.0})
  fake_results.write_run(root, cell, 1, 12.0, class_errors={'cat': 30.0, 'dog': 4.0})
  fake_results.write_run(root, cell, 2, 14.0)  # Older: no per-class results.
  plain = cells_lib.get_cell('table1/svhn_fisher_plain')
  fake_results.write_run(root, plain, 0, 20.0, best=False, class_errors={'cat': 6.0,
                                                                         'dog': 2.0})
  results = results_lib.collect(root, cells_lib.all_cells())
  out = str(tmp_path / 'tables')
  written = [os.path.basename(p) for p in tables.write_tables(results, out)]
  assert 'class_errors.csv' in written and 'class_errors.md' in written
  rows = list(csv.DictReader(open(os.path.join(out, 'class_errors.csv'))))
  assert [(r['cell'], r['seed'], r['balanced_test_error'], r['cat'], r['dog']) for r in rows] == [
      ('table1/cifar10_fisher_kplus1', '0', '10.00', '20.00', '0.00'),
      ('table1/cifar10_fisher_kplus1', '1', '17.00', '30.00', '4.00'),
      ('table1/svhn_fisher_plain', '0', '4.00', '6.00', '2.00')]
  markdown = _markdown_rows(open(os.path.join(out, 'class_errors.md')).read())
  assert markdown['table1/cifar10_fisher_kplus1'] == ['2', '13.50', '25.00', '2.00']
  older = str(tmp_path / 'older')
  fake_results.write_run(older, cell, 0, 10.0)
  written = tables.write_tables(results_lib.collect(older, cells_lib.all_cells()),
                                str(tmp_path / 'older_tables'))
  assert not any('class_errors' in p for p in written)


def test_the_earliest_of_tied_lowest_validation_errors_is_the_best_step():
  assert results_lib.earliest_tied_step({10: 2.5, 4: 2.5, 2: 3.0}) == 4
  assert results_lib.earliest_tied_step({6: 1.0, 8: 2.0}) == 6
  assert results_lib.earliest_tied_step({}) is None
