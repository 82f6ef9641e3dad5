"""The line bin/train ends with leads with the number to report (algorithm.md#data-and-model-selection)."""
from tf_ipmssl.run_dir import reporting


def test_final_line_reports_the_best_validation_step_first():
  metrics = {'best': {'step': 200, 'validation_error': 32.876, 'test_error': 32.714},
             'final': {'step': 300, 'validation_error': 36.6, 'test_error': 37.08},
             'exported': {'checkpoint': 'best', 'step': 200}}
  line = reporting.final_line(300, metrics)
  assert line == ('Finished 300 steps: test error 32.71% at the best validation step 200 '
                  '(validation 32.88%); last step: test error 37.08%. export/ holds the '
                  'classifier of step 200')


def test_final_line_names_the_largest_parts_of_the_wall_time_besides_training():
  """Of 1000 s: evaluation 30%, start-up 15%, export 12% (the third largest, left out),
  checkpoints 5% (under 10%), training 38% (not named)."""
  split = {'startup': 150.0, 'training': 380.0, 'evaluation': 300.0, 'checkpoints': 50.0,
           'export': 120.0, 'teardown': 0.0}
  line = reporting.final_line(300, {**METRICS, 'wall_split': split})
  assert line.endswith('last step: test error 18.25%. Wall time 1000 s, of it evaluation 30% '
                       'and start-up 15%')
  # One part over 10% (evaluation 11%), then none (a part of 10% exactly is not named).
  one = {'startup': 40.0, 'training': 800.0, 'evaluation': 110.0, 'checkpoints': 50.0,
         'export': 0.0, 'teardown': 0.0}
  assert reporting.final_line(300, {**METRICS, 'wall_split': one}).endswith(
      'test error 18.25%. Wall time 1000 s, of it evaluation 11%')
  none = {**one, 'evaluation': 100.0, 'training': 810.0}
  assert reporting.final_line(300, {**METRICS, 'wall_split': none}) == reporting.final_line(
      300, METRICS)


def test_final_line_without_a_validation_split():
  metrics = {'best': {'step': -1, 'validation_error': None, 'test_error': None},
             'final': {'step': 10, 'validation_error': None, 'test_error': 12.5}}
  line = reporting.final_line(10, metrics)
  assert line == ('Finished 10 steps: test error 12.50% at the last step (no validation '
                  'split, so no model selection)')


def _runs_csv(tmp_path, cells_errors, labels='100', dataset='fashion_mnist'):
  """A runs.csv as bin/sweep writes it: {cell id: {seed: error}}."""
  from tf_ipmssl import cells as cells_lib  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.sweep import results as results_lib  # pylint: disable=g-import-not-at-top
  results = {}
  for cell_id, errors in cells_errors.items():
    cell = cells_lib.get_cell(cell_id)
    runs = tuple(results_lib.RunResult(seed=s, test_error=e, model_dir='x', dataset=dataset,
                                       labels=labels, steps=600, wall_seconds=10.0)
                 for s, e in errors.items())
    results[cell.id] = results_lib.CellResult(cell, runs)
  path = tmp_path / 'runs.csv'
  path.write_text(results_lib.runs_csv(results))
  return str(path)


# The quickstart's baseline and recipe cells (gin/quickstart.gin).
SUPERVISED = 'appendix_c/cifar10_none_4k'
RECIPE = 'table1/cifar10_fisher_kplus1_entropy'
METRICS = {'best': {'step': 200, 'validation_error': 18.0, 'test_error': 17.5},
           'final': {'step': 300, 'validation_error': 19.0, 'test_error': 18.25}}


def test_final_line_shows_the_baseline_on_the_same_labels_and_the_means(tmp_path):
  from tf_ipmssl.run_dir import baseline  # pylint: disable=g-import-not-at-top
  path = _runs_csv(tmp_path, {SUPERVISED: {0: 19.0, 1: 20.0, 2: 21.5},
                              RECIPE: {0: 16.0, 1: 18.0, 2: 17.0}})
  run = baseline.RunData('fashion_mnist', 100, split_seed=1)
  line = reporting.final_line(300, METRICS, (path, SUPERVISED, RECIPE), run)
  # Seed 1's supervised run saw this run's labels: 17.5 − 20.0 = −2.5 points. Supervised
  # mean 20.1667, sample std sqrt(((−1.1667)² + (−0.1667)² + 1.3333²)/2) = 1.2583; recipe
  # 17.00 ± 1.00.
  assert line.endswith(
      f'; {SUPERVISED} on the same labels (split seed 1): 20.00%, -2.50 points; means over '
      f'seeds: {RECIPE} 17.00 ± 1.00% (n=3), {SUPERVISED} 20.17 ± 1.26% (n=3)')
  missing = reporting.final_line(300, METRICS, (path, 'other/cell'), run)
  assert missing.endswith(f'; baseline other/cell: no results in {path} yet')
  no_seed = reporting.final_line(300, METRICS, (path, SUPERVISED),
                                baseline.RunData('fashion_mnist', 100, split_seed=7))
  assert f'{SUPERVISED}: no run with split seed 7 in {path}' in no_seed


def test_final_line_hides_a_baseline_on_other_labels_or_data(tmp_path):
  from tf_ipmssl.run_dir import baseline  # pylint: disable=g-import-not-at-top
  path = _runs_csv(tmp_path, {SUPERVISED: {0: 19.0, 1: 20.0}})
  for run, why in ((baseline.RunData('fashion_mnist', 200, 0), 'this run on 200 of fashion_mnist'),
                   (baseline.RunData('cifar10', 100, 0), 'this run on 100 of cifar10')):
    line = reporting.final_line(300, METRICS, (path, SUPERVISED), run)
    assert line.endswith(f'; baseline {SUPERVISED} not shown: its runs trained on 100 labels '
                         f'of fashion_mnist, {why}')
    assert '19.' not in line and '20.' not in line
  # A runs.csv that does not record label counts is not trusted either.
  old = _runs_csv(tmp_path, {SUPERVISED: {0: 19.0}}, labels=None)
  line = reporting.final_line(300, METRICS, (old, SUPERVISED),
                             baseline.RunData('fashion_mnist', 100, 0))
  assert 'not shown: its runs trained on unrecorded labels' in line


def test_baseline_spec_is_checked():
  import pytest  # pylint: disable=g-import-not-at-top
  from tf_ipmssl import errors  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.run_dir import baseline  # pylint: disable=g-import-not-at-top
  baseline.check_spec(None)
  baseline.check_spec(('runs.csv', 'a/b'))
  baseline.check_spec(('runs.csv', 'a/b', 'c/d'))
  for bad in ('runs.csv', ('runs.csv',), ('runs.csv', 'a', 'b', 'c'), ('runs.csv', 3)):
    with pytest.raises(errors.ConfigError, match=r"train.baseline must be None or \('runs.csv'"):
      baseline.check_spec(bad)
