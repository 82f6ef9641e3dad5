"""The generated parts of the results pages: runs from runs.csv and records, merged; the
parts' numbers; studies/fashion_mnist_100/scripts/update_result_pages.py end to end on a copy of the pages."""
import os
import pathlib
import shutil
import subprocess
import sys

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import one_configuration
from studies.fashion_mnist_100 import paper_claims
from studies.fashion_mnist_100 import paper_pages
from studies.fashion_mnist_100 import step900_reading
from tf_ipmssl.sweep import results as results_lib

REPO = str(pathlib.Path(__file__).resolve().parents[3])  # The checkout.
RESULTS = os.path.join(REPO, 'docs', 'results')
PAGES = ('table1_fashion_mnist_100.md', 'table2_fashion_mnist_100.md',
         'table3_fashion_mnist_100.md', 'conclusions.md')
GP_F = 'table2/cifar10_gp_f'


def _run(seed, error, **kwargs):
  return results_lib.RunResult(seed=seed, test_error=error, model_dir='', **kwargs)


def _cell(cell_id, *runs):
  return results_lib.CellResult(cells_lib.get_cell(cell_id), tuple(runs))


def test_merge_replaces_a_seed_and_keeps_the_others():
  rows = {GP_F: _cell(GP_F, _run(0, 30.0), _run(1, 31.0))}
  records = {GP_F: _cell(GP_F, _run(1, 41.0), _run(2, 42.0))}
  merged = paper_pages.merge(rows, records)
  assert merged[GP_F].seeds == (0, 1, 2) and merged[GP_F].errors == (30.0, 41.0, 42.0)


def _results_dir(tmp_path, table2_rows):
  """A results folder with the committed pages and Table 1's runs, and Table 2 rows."""
  results = tmp_path / 'results'
  for page in PAGES + ('protocol.md', 'confirmation.md'):
    os.makedirs(results, exist_ok=True)
    shutil.copy(os.path.join(RESULTS, page), results / page)
  for table in ('table1', 'table2', 'table3'):
    os.makedirs(results / f'{table}_fashion_mnist_100')
  shutil.copy(os.path.join(RESULTS, 'table1_fashion_mnist_100', 'runs.csv'),
              results / 'table1_fashion_mnist_100' / 'runs.csv')
  (results / 'table2_fashion_mnist_100' / 'runs.csv').write_text(
      results_lib.runs_csv(table2_rows))
  return str(results)


def test_load_from_rows_and_records(tmp_path):
  baseline = paper_claims.BASELINE
  rows = {GP_F: _cell(GP_F, _run(0, 30.0), _run(1, 31.0)),
          baseline: _cell(baseline, _run(0, 28.0), _run(1, 29.0), _run(2, 30.0))}
  results_dir = _results_dir(tmp_path, rows)
  records = str(tmp_path / 'records')
  fake_results.write_run(records, cells_lib.get_cell(GP_F), 1, 51.0)
  fake_results.write_run(records, cells_lib.get_cell(GP_F), 2, 52.0)
  # A run whose record was lost stands in the records folder as a row of its own file.
  sobolev_f = 'table2/cifar10_sobolev_f'
  with open(os.path.join(records, results_lib.RECORDLESS_ROWS_FILE), 'w') as f:
    f.write(results_lib.runs_csv({sobolev_f: _cell(sobolev_f, _run(0, 33.0))}))
  table1, table23, row_only = paper_pages.load(results_dir, records)
  assert table1['table1/cifar10_fisher_plain'].n == 3
  assert table23[GP_F].errors == (30.0, 51.0, 52.0)
  assert table23[sobolev_f].errors == (33.0,)
  assert row_only == {(GP_F, 0), (baseline, 0), (baseline, 1), (baseline, 2), (sobolev_f, 0)}
  assert table23['table3/cifar10_none_fisher'].n == 0  # Every cell, with or without runs.
  status = paper_pages.status(table23, 'table2', row_only)
  assert status.startswith('4 of 36 runs finished (1 of 12 cells at n ≥ 3); the supervised '
                           'baseline: 3 runs (seeds 0, 1, 2).')
  assert ('no record beyond their runs.csv row: appendix_c/cifar10_none_4k seeds 0, 1, 2; '
          'table2/cifar10_gp_f seed 0; table2/cifar10_sobolev_f seed 0.') in status
  # Without records every run is a row, and none is named.
  _, table23, row_only = paper_pages.load(results_dir)
  assert table23[GP_F].errors == (30.0, 31.0) and row_only == set()


def test_status_names_the_extra_seeds_and_the_reused_runs():
  fisher_f, none_fisher = 'table2/cifar10_fisher_f', 'table3/cifar10_none_fisher'
  results = paper_pages.with_every_cell(
      {fisher_f: _cell(fisher_f, *(_run(s, 20.0 + s) for s in range(5))),
       none_fisher: _cell(none_fisher, _run(0, 20.0), _run(1, 21.0)),
       paper_claims.BASELINE: _cell(paper_claims.BASELINE, _run(0, 30.0))},
      paper_pages.table_cells('table2')[:-1] + paper_pages.table_cells('table3'))
  results = one_configuration.with_reused_seeds(results)
  assert paper_pages.status(results, 'table2', set()) == (
      '3 of 36 runs finished (1 of 12 cells at n ≥ 3); the '
      'supervised baseline: 1 run (seed 0). Extra seeds: table2/cifar10_fisher_f seeds 3, 4.')
  assert paper_pages.status(results, 'table3', set()) == (
      '2 of 33 runs finished (1 of 11 cells at n ≥ 3); the supervised baseline: 1 run (seed 0). '
      'Extra seeds: table3/cifar10_none_fisher seeds 3, 4 (the runs of '
      'table2/cifar10_fisher_f, one configuration).')


def test_status_names_the_cells_whose_seeds_mix_cpus():
  fisher_f, sobolev_f = 'table2/cifar10_fisher_f', 'table2/cifar10_sobolev_f'
  results = paper_pages.with_every_cell(
      {fisher_f: _cell(fisher_f, _run(0, 20.0, cpu='A'), _run(1, 21.0, cpu='A'),
                       _run(2, 22.0, cpu='B')),
       sobolev_f: _cell(sobolev_f, _run(0, 20.0, cpu='A'), _run(1, 21.0, cpu='A'),
                        _run(2, 22.0, cpu='B')),
       GP_F: _cell(GP_F, _run(0, 20.0, cpu='A'), _run(1, 21.0, cpu='A')),
       paper_claims.BASELINE: _cell(paper_claims.BASELINE, _run(0, 30.0, cpu='B'),
                                    _run(1, 30.0))},
      paper_pages.table_cells('table2'))
  assert paper_pages.status(results, 'table2', set()).endswith(
      'Cells whose seeds ran on different CPUs: seeds 0, 1 on A and seed 2 on B: '
      'table2/cifar10_sobolev_f, table2/cifar10_fisher_f; seed 0 on B and seed 1 on a CPU '
      'not recorded: appendix_c/cifar10_none_4k.')


def test_late_collapses_lists_runs_that_end_five_points_above_their_best_step():
  results = {GP_F: _cell(GP_F, _run(0, 30.0, last_test_error=34.99),
                         _run(1, 30.0, last_test_error=35.0), _run(2, 30.0)),
             paper_claims.BASELINE: _cell(paper_claims.BASELINE,
                                          _run(0, 28.0, last_test_error=90.0))}
  assert paper_pages.late_collapses(results).splitlines() == [
      '- table2/cifar10_gp_f seed 1: 30.00% at the best validation step, 35.00% at the last '
      'step (+5.0)',
      '- appendix_c/cifar10_none_4k seed 0: 28.00% at the best validation step, 90.00% at '
      'the last step (+62.0)',
      '- Runs whose last-step test error is not kept (their runs.csv row holds the best '
      "step's only): table2 1."]
  assert paper_pages.late_collapses({GP_F: _cell(GP_F, _run(0, 30.0, last_test_error=31.0))}
                                    ) == ('- No run ends 5 points or more above its best-step '
                                          'error.')


def test_labeled_table_and_wall_times():
  results = paper_pages.with_every_cell({GP_F: _cell(
      GP_F, _run(0, 30.0, labeled_error=10.0, last_labeled_error=20.0, wall_seconds=1234.4),
      _run(1, 32.0, labeled_error=12.0, last_labeled_error=40.0, cpu='Xeon',
           lowest_labeled_error=3.0))},
      paper_pages.table_cells('table2'))
  row = paper_pages.labeled_table(results).splitlines()[2]
  assert row == ('| table2/cifar10_gp_f | gradient norm on f | 31.00 ± 1.41 (n=2) | '
                 '30.00 ± 14.14 (n=2) | 11.00 ± 1.41 (n=2) | 20 (10; –) / 40 (12; 3) |')
  assert paper_pages.wall_times(results, 'table2').splitlines()[2:] == [
      '| table2/cifar10_gp_f | 0 | – | 1,234 | not recorded |',
      '| table2/cifar10_gp_f | 1 | – | – | Xeon |']


def test_wall_times_name_whose_run_a_reused_seed_is():
  fisher_f, none_fisher = 'table2/cifar10_fisher_f', 'table3/cifar10_none_fisher'
  table23 = paper_pages.with_every_cell(one_configuration.with_reused_seeds({
      fisher_f: _cell(fisher_f, _run(0, 27.0, wall_seconds=800.0),
                      _run(3, 29.0, wall_seconds=1500.0)),
      none_fisher: _cell(none_fisher, _run(0, 27.0, wall_seconds=900.0))}),
      paper_pages.table_cells('table2')[:-1] + paper_pages.table_cells('table3'))
  rows = [line for line in paper_pages.wall_times(table23, 'table3').splitlines()
          if none_fisher in line]
  assert rows == [f'| {none_fisher} | 0 | – | 900 | not recorded |',
                  f"| {none_fisher} ({fisher_f}'s run) | 3 | – | 1,500 | not recorded |"]
  assert paper_pages.wall_times(table23, 'table2').count(fisher_f) == 2


def test_the_script_regenerates_every_page(tmp_path):
  # The committed Table 2 runs of seeds 0 and 1, which are finished: the numbers below do not
  # move as the sweep commits further seeds.
  committed = results_lib.read_runs_csv(
      os.path.join(RESULTS, 'table2_fashion_mnist_100', 'runs.csv'))
  rows = {cell_id: results_lib.CellResult(result.cell, tuple(r for r in result.runs
                                                             if r.seed < 2))
          for cell_id, result in committed.items()}
  results_dir = _results_dir(tmp_path, rows)
  script = os.path.join(REPO, 'studies', 'fashion_mnist_100', 'scripts', 'update_result_pages.py')
  readme = tmp_path / 'README.md'
  shutil.copy(os.path.join(REPO, 'README.md'), readme)
  shutil.copy(os.path.join(RESULTS, 'augmentation.md'), results_dir)
  done = subprocess.run([sys.executable, script, f'--results_dir={results_dir}',
                         f'--readme={readme}', f'--augmentation_records={tmp_path / "none"}'],
                        capture_output=True, text=True, cwd=str(tmp_path), check=False)
  assert done.returncode == 0, done.stderr
  assert done.stdout.count('Wrote ') == 6
  with open(os.path.join(results_dir, 'augmentation.md')) as f:
    assert 'Trained on: no run finished yet.' in f.read()
  # README's three verdict lines, between its markers.
  verdicts = readme.read_text().split('<!-- begin verdicts -->\n')[1].split('<!--')[0]
  # The confirmation has no runs here; the exploratory reading of (1) is Table 1's three
  # splits, each plain above K+1 (p = 1/8); the rows keep no eval curve (no late reading of
  # (2)) and there are no broadcast-f runs (no interaction).
  assert verdicts.splitlines() == [
      '- The K+1 formulation works (Table 1), as K+1 below plain (Fisher and Sobolev): '
      'confirmation: 0 of 6 label splits trained; exploratory, the earlier splits 0–2 '
      '(unadjusted): p=0.125 (n=3 splits, least possible 0.125)',
      '- Avoid batch normalization, also for Fisher (Table 3), as Batch norm above no '
      'normalization (Fisher): confirmation: 0 of 6 label splits trained; exploratory: no runs',
      '- Gradient-norm constraints on f− only, not on the full critic (Table 2), as Sobolev on '
      'f rather than f− costs more under the broadcast f: confirmation: 0 of 6 label splits '
      'trained; exploratory: no runs',
      '- Readings (exploratory, read after their runs): the longer budget: 0 of 6 runs '
      'trained; the step-900 jump of broadcast Ω_S(f): its runs are not all recorded yet']
  with open(os.path.join(results_dir, 'conclusions.md')) as f:
    conclusions = f.read()
  # The earlier protocol's pair test: family 1 on 9 differences of one sign (p = 1/512),
  # Holm over it and family 3a's test on the seeds 0 and 1 that Table 2's rows give its two
  # pairs: -0.57 / -0.65 and +1.55 / -4.63, T = -1 - 1/3, and only (-1) + (-1) of the 16 sign
  # patterns lies below: p = 15/16 (3 of 16 at or below, the other way: 0.188).
  assert '| 1 | best step | 9 of 9 | +4.50 | 0.002 | 1.000 | 0.0039 | supported |' in conclusions
  assert '| 3a | best step | 4 of 16 | -1.33 | 0.938 | 0.188 | 0.938 | not shown at this n |' \
      in conclusions
  assert '<!-- begin conclusion1 -->\n**The sign rule (secondary): holds.**' in conclusions
  assert 'fisher_plain − fisher_kplus1: +66.1 / +7.0 / +5.3 (n=3, mean +26.1): holds' in \
      conclusions
  assert 'Under the replaced rule' not in conclusions  # Its history is the study's README.
  # No step-900 runs and rows without curves: the reading waits and lists no other record.
  step900 = conclusions.split('<!-- begin step900 -->\n')[1].split('<!--')[0]
  assert step900 == f'- {step900_reading.CONCLUSIONS[step900_reading.WAITING]}\n'
  with open(os.path.join(results_dir, 'table3_fashion_mnist_100.md')) as f:
    table3 = f.read()
  assert '0 of 33 runs finished' in table3
  # Table 1's and Table 2's runs of one configuration, seed by seed.
  assert ('| table1/cifar10_fisher_kplus1, table2/cifar10_fisher_f | 0 | 23.92 (CPU not '
          'recorded); 22.61 (Intel Xeon avx512f GenuineIntel-6-207) | no: 1.31 points apart, '
          'a CPU not recorded |') in table3
  # A user mistake: one line, exit 1.
  done = subprocess.run([sys.executable, script, f'--results_dir={results_dir}',
                         f'--records={tmp_path / "nowhere"}'],
                        capture_output=True, text=True, cwd=str(tmp_path), check=False)
  assert done.returncode == 1
  assert done.stderr.strip().splitlines() == [
      f'error: --records={tmp_path / "nowhere"} is not a folder']
