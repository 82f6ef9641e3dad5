"""Synthetic records of the study's runs, whose numbers the tests choose: a metrics.json with
the keys the study reads, a versions.json naming a CPU, and eval curves where given."""
import json
import os

import tensorflow as tf

from studies.user_data.readings import K_PLUS_1, SUPERVISED  # pylint: disable=unused-import
CLASS_NAMES = ('T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt',
               'Sneaker', 'Bag', 'Ankle boot')


def write_run(model_dir, test_error, balanced=None, aurocs=None, curves=None, cpu='CPU A',
              final=None, class_errors=None, foreign_test=None):
  """A record at model_dir: best.test_error `test_error`, best.test_balanced_error
  `balanced`, final.test_error `final`, best.test_class_errors {name: error} of
  `class_errors` (a list by label) with class_names, foreign_test `foreign_test` (else one
  with only the AUROCs of `aurocs`), and eval scalars {tag: {step: value}} `curves`."""
  os.makedirs(model_dir, exist_ok=True)
  metrics = {'best': {'test_error': test_error, 'test_balanced_error': balanced,
                      'test_confusion': [[3000, 1000], [1000, 3000]]}}
  if final is not None:
    metrics['final'] = {'test_error': final}
  if class_errors is not None:
    metrics['best']['test_class_errors'] = dict(zip(CLASS_NAMES, class_errors))
    metrics['class_names'] = list(CLASS_NAMES)
  if aurocs:
    foreign_test = {'scores': {name: {'auroc': value} for name, value in aurocs.items()}}
  if foreign_test:
    metrics['foreign_test'] = foreign_test
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    json.dump(metrics, f)
  with open(os.path.join(model_dir, 'versions.json'), 'w') as f:
    json.dump({'numerics': {'cpu': {'model_name': cpu}}}, f)
  if curves:
    writer = tf.summary.create_file_writer(os.path.join(model_dir, 'eval'))
    with writer.as_default():
      for tag, points in curves.items():
        for step, value in points.items():
          tf.summary.scalar(tag, value, step=step)
    writer.close()


def edited_copy(records, destination, edits):
  """A copy of the records at `destination` (returned) with each (part, cell, seed, edit) of
  `edits` applied: edit(metrics) changes the run's metrics.json in place."""
  import shutil  # pylint: disable=g-import-not-at-top
  from studies.user_data import plan as plan_lib  # pylint: disable=g-import-not-at-top
  shutil.copytree(records, destination)
  for part, cell, seed, edit in edits:
    path = os.path.join(plan_lib.record_dir(destination, part, cell, seed), 'metrics.json')
    with open(path) as f:
      metrics = json.load(f)
    edit(metrics)
    with open(path, 'w') as f:
      json.dump(metrics, f)
  return str(destination)
