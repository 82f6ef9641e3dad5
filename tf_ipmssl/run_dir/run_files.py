"""The files of a run directory (bin/train's --model_dir): their names, reading and writing.

A run directory holds

- config.gin: the gin configuration the run was started with (as text);
- run_config.json: the validated run configuration, every setting by gin name (its
  identity, training/run_config.py; its formats, config_formats.py);
- operative_config.gin: the gin parameters actually used (after the first step);
- versions.json: library versions and numerics of each start (run_record.py);
- dataset.json: what a restored classifier needs to know of its data;
- metrics.json: step, the latest and the best-on-validation evaluation's errors (written by
  the trainer; reporting.py);
- checkpoints/: the training checkpoints; best/: the critic of the best validation step;
- export/: the SavedModel classifier;
- train/, eval/: TensorBoard summaries;
- hparams/: the run's hyperparameters and final metrics for TensorBoard's HParams dashboard
  (training/tensorboard.py);
- train.log: the run's output under bin/sweep;
- diagnosis.json: bin/diagnose's gradient split (by default).

Training, restore, the sweep and the figure scripts read these names here. This module
imports no TensorFlow: local paths are read and written with the standard library; paths
with a scheme (gs://...) go through tf.io.gfile, imported only for them.
"""
import json
import os
import sys
from typing import Optional

from tf_ipmssl import errors
from tf_ipmssl import fault_injection

CONFIG_FILE = 'config.gin'
RUN_CONFIG_FILE = 'run_config.json'
OPERATIVE_CONFIG_FILE = 'operative_config.gin'
VERSIONS_FILE = 'versions.json'
DATASET_FILE = 'dataset.json'
METRICS_FILE = 'metrics.json'
CHECKPOINT_DIR = 'checkpoints'
BEST_CHECKPOINT_DIR = 'best'
EXPORT_DIR = 'export'
TRAIN_SUMMARY_DIR = 'train'
EVAL_SUMMARY_DIR = 'eval'
HPARAMS_DIR = 'hparams'
LOG_FILE = 'train.log'
DIAGNOSIS_FILE = 'diagnosis.json'


def _gfile():
  """tf.io.gfile, for paths with a scheme (gs://, ...) only."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def _remote(path: str) -> bool:
  return '://' in path


def exists(path: str) -> bool:
  return _gfile().exists(path) if _remote(path) else os.path.exists(path)


def read_text(path: str) -> str:
  if _remote(path):
    with _gfile().GFile(path) as f:
      return f.read()
  with open(path, encoding='utf-8') as f:
    return f.read()


def write_text(path: str, text: str, point: Optional[str] = None):
  """Writes `path` atomically: a reader sees the old content or the new, never a part.

  `point`: the fault_injection point reached between writing the new content and renaming
  it into place.
  """
  tmp = path + '.tmp'
  if _remote(path):
    with _gfile().GFile(tmp, 'w') as f:
      f.write(text)
    _gfile().rename(tmp, path, overwrite=True)
    return
  with open(tmp, 'w', encoding='utf-8') as f:
    f.write(text)
  if point:
    fault_injection.reach(point)
  os.replace(tmp, path)


def check_writable(model_dir: str):
  """A UserError naming the cause when model_dir (or, while it does not exist, the folder it
  would be made in) cannot be written: a read-only file system, no permission. Reads only;
  paths with a scheme are not checked."""
  if _remote(model_dir):
    return
  path = os.path.abspath(model_dir)
  while not os.path.exists(path) and os.path.dirname(path) != path:
    path = os.path.dirname(path)
  if os.access(path, os.W_OK):
    return
  try:
    read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
  except OSError:
    read_only = False
  cause = 'Read-only file system' if read_only else 'Permission denied'
  raise errors.UserError(
      f'cannot write to {model_dir} ({cause}); the run must write there to go on: use a '
      'directory you can write (or make this one writable), then rerun the same command')


def read_json(model_dir: str, name: str, unreadable_ok: bool = False,
              quiet: bool = False) -> Optional[dict]:
  """The JSON file `name` of model_dir; None when it is missing.

  With `unreadable_ok` also None when it cannot be read or parsed (for readers of many
  runs, such as the sweep's tables, which go on with the others): a file that exists but
  cannot be read is damaged (run directories' files are written whole), and is named in one
  warning line on stderr, once per process, unless `quiet` (a file written in place, such
  as a lock, read while it may be half-written).
  """
  path = os.path.join(model_dir, name)
  try:
    if not exists(path):
      return None
    return json.loads(read_text(path))
  except (OSError, ValueError) as e:
    if unreadable_ok:
      if not quiet:
        _warn_damaged(path, e)
      return None
    raise


_warned = set()


def _warn_damaged(path: str, e: Exception):
  if path in _warned:
    return
  _warned.add(path)
  cause = errors.first_line(e)
  print(f'warning: {path} is damaged and cannot be read ({type(e).__name__}: {cause}); read '
        'as missing', file=sys.stderr, flush=True)


def write_json(model_dir: str, name: str, content: dict, point: Optional[str] = None):
  write_text(os.path.join(model_dir, name), json.dumps(content, indent=2), point)


def read_metrics(model_dir: str, unreadable_ok: bool = False) -> Optional[dict]:
  """The run's metrics.json; None when missing (or unreadable, with unreadable_ok)."""
  return read_json(model_dir, METRICS_FILE, unreadable_ok)


def finished(model_dir: str) -> bool:
  """Whether the run's metrics.json says it finished (False while missing or unreadable)."""
  metrics = read_metrics(model_dir, unreadable_ok=True)
  return bool(metrics and metrics.get('finished'))


def write_metrics(model_dir: str, metrics: dict):
  write_json(model_dir, METRICS_FILE, metrics, point='metrics_replace')
