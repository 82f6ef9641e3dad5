"""record_readings.py: the lowest labeled-set error over a run's eval curve, and the reported
error moved to the earliest of a run's tied best validation steps, on records written here
with known curves."""
import os

from studies.fashion_mnist_100 import record_readings
from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import results as results_lib


def test_the_lowest_labeled_error_over_a_run_is_read_from_its_eval_curve(tmp_path):
  """The minimum of the run's eval/labeled_error events, written as the trainer writes them;
  a run without an eval curve keeps None, and the other curves are not read for it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import tensorboard  # pylint: disable=g-import-not-at-top
  root = str(tmp_path / 'sweep')
  cell = cells_lib.get_cell('table2/cifar10_sobolev_f')
  with_curve = fake_results.write_run(root, cell, 0, 30.0)
  fake_results.write_run(root, cell, 1, 31.0)
  writer = tf.summary.create_file_writer(os.path.join(with_curve, 'eval'))
  for step, labeled, test in ((50, 30.0, 20.0), (100, 7.0, 21.0), (150, 12.0, 1.0)):
    tensorboard.write_scalars(writer, step, {'eval/labeled_error': labeled,
                                             'eval/test_error': test})
  writer.close()
  results = record_readings.with_lowest_labeled_errors(results_lib.collect(root, [cell]))
  assert [r.lowest_labeled_error for r in results[cell.id].runs] == [7.0, None]
  assert [r.test_error for r in results[cell.id].runs] == [30.0, 31.0]


def test_the_earliest_of_tied_best_steps_is_reported(tmp_path):
  """A record whose metrics.json names a later step of the same lowest validation error
  reports the earlier step's test and labeled errors (counted by hand below); a record
  naming the earliest already, and one without a curve, are left as they are. The
  validation errors are written as the trainer writes them (float32 events)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import tensorboard  # pylint: disable=g-import-not-at-top
  root = str(tmp_path / 'sweep')
  cell = cells_lib.get_cell('table2/cifar10_fisher_f')
  later = fake_results.write_run(root, cell, 0, 24.40)  # metrics.json: step 10.
  earliest = fake_results.write_run(root, cell, 1, 30.0)
  fake_results.write_run(root, cell, 2, 31.0)  # No curve.
  curves = {later: ((4, 25.62, 24.52, 3.0), (6, 26.0, None, 2.0), (10, 25.62, 24.40, 1.0)),
            earliest: ((10, 25.60, 30.0, 0.0), (12, 25.60, None, 0.0))}
  for model_dir, points in curves.items():
    writer = tf.summary.create_file_writer(os.path.join(model_dir, 'eval'))
    for step, validation, test, labeled in points:
      scalars = {'eval/validation_error': validation, 'eval/labeled_error': labeled}
      if test is not None:
        scalars['eval/test_error'] = test
      tensorboard.write_scalars(writer, step, scalars)
    writer.close()
  results, moved = record_readings.with_earliest_tied_best(results_lib.collect(root, [cell]))
  runs = results[cell.id].runs
  assert [round(r.test_error, 4) for r in runs] == [24.52, 30.0, 31.0]
  assert [r.best_step for r in runs] == [4, None, None]
  assert runs[0].labeled_error == 3.0
  assert [(c, s, a, b) for c, s, a, b, _, _ in moved] == [(cell.id, 0, 10, 4)]
