"""The line bin/train ends with leads with the number to report (SPEC §6 model selection)."""
from tf_ipmssl.training import trainer


def test_final_line_reports_the_best_validation_step_first():
  metrics = {'best': {'step': 200, 'validation_error': 32.876, 'test_error': 32.714},
             'final': {'step': 300, 'validation_error': 36.6, 'test_error': 37.08},
             'exported': {'checkpoint': 'best', 'step': 200}}
  line = trainer._final_line(300, metrics)  # pylint: disable=protected-access
  assert line == ('Finished 300 steps: test error 32.71% at the best validation step 200 '
                  '(validation 32.88%); last step: test error 37.08%. export/ holds the '
                  'classifier of step 200')


def test_final_line_without_a_validation_split():
  metrics = {'best': {'step': -1, 'validation_error': None, 'test_error': None},
             'final': {'step': 10, 'validation_error': None, 'test_error': 12.5}}
  line = trainer._final_line(10, metrics)  # pylint: disable=protected-access
  assert line == ('Finished 10 steps: test error 12.50% at the last step (no validation '
                  'split, so no model selection)')


def test_final_line_shows_the_baseline_from_a_sweep_runs_csv(tmp_path):
  from tf_ipmssl import cells as cells_lib  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.sweep import tables  # pylint: disable=g-import-not-at-top
  cell = cells_lib.get_cell('fashion_mnist_study/fashion_mnist_supervised')
  runs = [tables.RunResult(seed=s, test_error=e, model_dir='x', dataset='fashion_mnist', steps=600,
                           wall_seconds=10.0) for s, e in ((0, 19.0), (1, 20.0), (2, 21.5))]
  path = tmp_path / 'runs.csv'
  path.write_text(tables.runs_csv({cell.id: tables.CellResult(cell, tuple(runs))}))
  metrics = {'best': {'step': 200, 'validation_error': 18.0, 'test_error': 17.5},
             'final': {'step': 300, 'validation_error': 19.0, 'test_error': 18.25}}
  line = trainer._final_line(300, metrics, (str(path), cell.id))  # pylint: disable=protected-access
  # mean 20.1667, sample std sqrt(((−1.1667)² + (−0.1667)² + 1.3333²)/2) = 1.2583.
  assert line.endswith('; baseline fashion_mnist_study/fashion_mnist_supervised: 20.17 ± 1.26% '
                       '(mean of 3 seeds)')
  missing = trainer._final_line(300, metrics, (str(path), 'other/cell'))  # pylint: disable=protected-access
  assert missing.endswith(f'; baseline other/cell: no results in {path} yet')
