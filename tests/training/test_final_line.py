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
