"""event_files.read_eval_curves: a run's evaluation curves from its eval/ events, as the page
code reads them (the late validation error, the lowest labeled-set error, the step-900
reading)."""
import os
import time

import numpy as np
import tensorflow as tf

from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import event_files


def _session(model_dir, points, image_at=None):
  """One training session's eval/ events: {step: {tag: value}}, and a sample image."""
  writer = tf.summary.create_file_writer(os.path.join(model_dir, run_files.EVAL_SUMMARY_DIR))
  with writer.as_default():
    for step, scalars in points.items():
      for tag, value in scalars.items():
        tf.summary.scalar(tag, value, step=step)
    if image_at is not None:
      tf.summary.image('samples', np.zeros([1, 4, 4, 1], np.float32), step=image_at)
  writer.close()


def test_a_resumed_run_keeps_each_steps_later_value(tmp_path):
  model_dir = str(tmp_path / 'run')
  _session(model_dir, {50: {'eval/validation_error': 40.0, 'eval/labeled_error': 30.0},
                       100: {'eval/validation_error': 35.0}}, image_at=100)
  time.sleep(1.1)  # The second session's event file sorts after the first's.
  # Resumed from step 50: step 100 evaluated again, with another value.
  _session(model_dir, {100: {'eval/validation_error': 36.5}, 150: {'eval/validation_error': 33.0}})
  curves = event_files.read_eval_curves(model_dir)
  assert curves == {'eval/validation_error': {50: 40.0, 100: 36.5, 150: 33.0},
                    'eval/labeled_error': {50: 30.0}}


def test_a_run_without_eval_events_has_no_curves(tmp_path):
  assert event_files.read_eval_curves(str(tmp_path / 'never_trained')) == {}
  assert event_files.read_eval_curves(None) == {}
