"""What a run writes beside its checkpoints so it can be identified and reproduced: with
metrics.json, its record (the small files a sweep's archive keeps, sweep/archive.py).

- config.gin: the full gin configuration the run was started with (as text; nothing parses
  it again).
- run_config.json: the validated run configuration (run_config.RunConfig.to_json): every
  setting as given, one object per gin name (train, the algorithm's, the builders'; the
  format and its history: config_formats.py). The run's identity: `run.run_config_of` rebuilds the RunConfig from
  it alone, and resuming with a configuration that differs in a setting is refused
  (run.check_config), so an existing run is never silently mixed with another.
- operative_config.gin: the gin parameters the run's configuration was read from, defaults
  included, written once the first step ran.
- versions.json: (of the first start; each resume appended under 'resumes') library,
  TensorFlow, Keras, Python, NumPy versions, the command line, the library's source (its git
  commit and whether tracked files differ from it, where it runs from a git checkout) and
  what else decides the float results: threads and kernels (`numerics`). The same config
  and seeds on another thread count give another (equally valid) run: summation order
  changes in the last bits and a GAN's trajectory amplifies it. `train.deterministic_ops`
  pins one thread per op for bit-exact repeats; `summation_order_fixed` says the graphs were
  built without Grappler's arithmetic optimizer (training/precision.py), which otherwise sums
  in an order that differs between processes. Of a run written before the file named the
  CPU, `numerics` lacks `cpu` (sweep/archive.py then keeps the CPU of the machine that saw
  the run finish).
- dataset.json: what a classifier restored from the run needs without loading the data
  (`write_dataset`). Of a run written before the file held them, it lacks `class_names`
  (`read_dataset` then gives the dataset's, or '0', '1', ...) and `resize` (then none).
- metrics.json: the latest and the best-on-validation evaluation's errors (written by the
  trainer; reporting.py).

The file names and their reading and writing are `run_files`'s.
"""
import datetime
import os
import platform
import subprocess
import sys

import keras
import numpy as np
import tensorflow as tf

import tf_ipmssl
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import image_rules
from tf_ipmssl.run_dir import cpu_info
from tf_ipmssl.run_dir import run_files


def write_start_files(model_dir, resuming, config, summation_order_fixed):
  """Writes config.gin (the gin configuration `config`, a RunConfig, was read from),
  run_config.json (`config` as JSON) and versions.json (`summation_order_fixed`: whether
  this process's graphs are built with the summation order fixed, training/precision.py's
  summation_order_fixed()).

  The caller has checked a resumed run's configuration (run.check_config) before.
  versions.json keeps the first start's entry; each resume (`resuming`) appends its own to
  'resumes'.
  """
  tf.io.gfile.makedirs(model_dir)
  run_files.write_text(os.path.join(model_dir, run_files.CONFIG_FILE), config.gin_text)
  run_files.write_json(model_dir, run_files.RUN_CONFIG_FILE, config.to_json())
  session = {
      'tf_ipmssl': tf_ipmssl.__version__, 'tensorflow': tf.__version__,
      'keras': keras.__version__, 'numpy': np.__version__, 'python': platform.python_version(),
      'platform': platform.platform(), 'command': sys.argv,
      'started': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
      'devices': [d.name for d in tf.config.list_logical_devices()],
      'numerics': _numerics(summation_order_fixed),
      'source': git_revision(os.path.dirname(os.path.abspath(tf_ipmssl.__file__))),
  }
  versions = session
  previous = run_files.read_json(model_dir, run_files.VERSIONS_FILE) if resuming else None
  if previous is not None:
    versions = previous
    versions.setdefault('resumes', []).append(session)
  run_files.write_json(model_dir, run_files.VERSIONS_FILE, versions)


def remove_partial_checkpoints(directories):
  """Removes the `ckpt-N_temp*` directories a killed checkpoint write leaves behind.

  TensorFlow writes a checkpoint into such a directory and renames its files when complete;
  a leftover is never read, only takes space.
  """
  for directory in directories:
    for path in tf.io.gfile.glob(os.path.join(directory, '*_temp*')):
      if tf.io.gfile.isdir(path):
        tf.io.gfile.rmtree(path)


def git_revision(directory):
  """{'commit': the HEAD of the git checkout that tracks the files of `directory`, 'dirty':
  whether tracked files differ from it}, or None where there is none (no git; a copy
  installed elsewhere, even inside another project's checkout, e.g. its ignored venv)."""
  def git(*args):
    return subprocess.run(['git', '-C', directory, *args], capture_output=True, text=True,
                          timeout=30, check=True).stdout.strip()
  try:
    if not git('ls-files', '--', '.'):  # Not this checkout's own files.
      return None
    commit = git('rev-parse', 'HEAD')
    dirty = bool(git('status', '--porcelain', '--untracked-files=no'))
  except (OSError, subprocess.SubprocessError):
    return None
  return {'commit': commit, 'dirty': dirty}


def _numerics(summation_order_fixed):
  """Settings that change float results without changing the configuration."""
  return {
      'cpu_count': os.cpu_count(),
      'cpu': cpu_info.description(),
      'intra_op_threads': tf.config.threading.get_intra_op_parallelism_threads(),
      'inter_op_threads': tf.config.threading.get_inter_op_parallelism_threads(),
      'summation_order_fixed': summation_order_fixed,
      **{name: os.environ.get(name) for name in (
          'TF_NUM_INTRAOP_THREADS', 'TF_NUM_INTEROP_THREADS', 'TF_ENABLE_ONEDNN_OPTS')},
  }


def resize_rule(data):
  """The rule that brings images of any size to the data's image_shape
  (image_rules.fit_images), by name; None where images come in image_shape."""
  return image_rules.resize_rule(data.image_shape[0]) if data.resizes_images else None


def write_dataset(model_dir, data):
  """What a classifier restored from this run needs without loading the data: dataset.json's
  name, num_classes, image_shape (the critic's input), source, class_names (by label) and
  resize (the rule that brings images of any size to image_shape, image_rules.fit_images;
  null where images come in image_shape); and counts, the split as drawn
  (ssl_data.SSLData.counts: images per class of labeled, validation and test, the unlabeled
  images and how many are of other classes)."""
  run_files.write_json(model_dir, run_files.DATASET_FILE, {
      'name': data.name, 'num_classes': int(data.num_classes),
      'image_shape': [int(d) for d in data.image_shape], 'source': data.source,
      'class_names': list(data.class_names),
      'resize': resize_rule(data),
      'counts': data.counts()})


def read_dataset(model_dir):
  """dataset.json of the run in model_dir; where it lacks class_names or resize (an older
  file: the module doc), its dataset's class names (dataset_specs) and no resize rule."""
  dataset = run_files.read_json(model_dir, run_files.DATASET_FILE)
  if dataset is None:
    raise errors.UserError(f'{model_dir} is not a tf_ipmssl run directory (no '
                           f'{run_files.DATASET_FILE})')
  if 'class_names' not in dataset:
    spec = dataset_specs.REGISTRY.get(dataset['name'])
    dataset['class_names'] = list(spec.class_names) if spec else [
        str(label) for label in range(dataset['num_classes'])]
  dataset.setdefault('resize', None)
  return dataset


def write_operative_config(model_dir, config):
  """operative_config.gin: the gin parameters the run's configuration `config` was read
  from, defaults included."""
  run_files.write_text(os.path.join(model_dir, run_files.OPERATIVE_CONFIG_FILE),
                       config.operative_gin_text)
