"""A run's TensorBoard event files read back: its logged scalars and its evaluation curves.

The trainer writes them (training/tensorboard.py); bin/diagnose, the studies' readings and
any reader of a run's record read them here, without the trainer's package.
"""
import os
import sys

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files


def read_scalars(directory):
  """{tag: [(step, value), ...]} (step order) from the TensorBoard event files in directory;
  a step written twice (a run resumed from a checkpoint) keeps its values in the order
  written, files in name (creation) order. A damaged file is named in one warning line on
  stderr, and the scalars before its damage are kept."""
  curves = {}
  if not tf.io.gfile.isdir(directory):
    return curves
  for name in sorted(tf.io.gfile.listdir(directory)):
    if 'tfevents' not in name:
      continue
    path = os.path.join(directory, name)
    try:
      for event in _events(path):
        for value in event.summary.value:
          array = tf.make_ndarray(value.tensor)
          if array.ndim == 0:  # Scalars only (not the sample images).
            curves.setdefault(value.tag, []).append((int(event.step), float(array)))
    except tf.errors.DataLossError as e:  # A damaged record: what precedes it stands.
      print(f'warning: {path} is damaged ({errors.first_line(e)}); its scalars '
            'from there on are not read', file=sys.stderr, flush=True)
  return {tag: sorted(points, key=lambda point: point[0]) for tag, points in curves.items()}


def _events(path):
  """The Event protos of one event file, in the order written (TFRecord framing, each
  record's checksums checked: a damaged one raises DataLossError)."""
  for record in tf.data.TFRecordDataset(path):
    yield tf.compat.v1.Event.FromString(record.numpy())


def read_eval_curves(model_dir):
  """{tag: {step: value}} of a run's evaluations (its eval/ events, read once); a step
  evaluated twice (a resumed run) keeps the later value. {} where the run keeps none."""
  if not model_dir:
    return {}
  directory = os.path.join(model_dir, run_files.EVAL_SUMMARY_DIR)
  return {tag: dict(points) for tag, points in read_scalars(directory).items()}
