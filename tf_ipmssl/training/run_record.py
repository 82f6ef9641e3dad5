"""What a run writes beside its checkpoints so it can be identified and reproduced.

- config.gin: the full gin configuration the run was started with (its identity: resuming
  with a different one is refused, so an existing run is never silently mixed with another).
- run_config.json: the validated run configuration (run_config.RunConfig.to_json): every
  train setting as used (scaled learning rates and ρ included) and the data and network
  bindings.
- operative_config.gin: the gin parameters the run's configuration was read from, defaults
  included, written once the first step ran.
- versions.json: (of the first start; each resume appended under 'resumes') library,
  TensorFlow, Keras, Python, NumPy versions, the command line, the library's source (its git
  commit and whether tracked files differ from it, where it runs from a git checkout) and
  what else decides the float results: threads and kernels (`numerics`). The same config
  and seeds on another thread count give another (equally valid) run: summation order
  changes in the last bits and a GAN's trajectory amplifies it. `train.deterministic_ops`
  pins one thread per op for bit-exact repeats.
- metrics.json: final and best-on-validation errors (written by the trainer).

The file names and their reading and writing are `tf_ipmssl.run_files`'s.
"""
import contextlib
import datetime
import os
import platform
import subprocess
import sys

import gin
import keras
import numpy as np
import tensorflow as tf

import tf_ipmssl
from tf_ipmssl import errors
from tf_ipmssl import run_files
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import image_folder
from tf_ipmssl.training import cpu_info

# Bindings that may differ on resume: how a run is observed, how long it goes on, where
# the (same) data files are read from, and what its final line compares with.
_RESUMABLE_CHANGES = ('log_every', 'eval_every', 'checkpoint_every', 'sample_every',
                      'export_classifier', 'keep_checkpoints', 'steps', 'epochs',
                      'eval_batch_size', 'data_dir', 'baseline')


def _identity_lines(config_text):
  return [line for line in config_text.splitlines()
          if line.strip() and not line.lstrip().startswith('#')
          and not any(f'.{p} =' in line for p in _RESUMABLE_CHANGES)]


def check_config(model_dir, config):
  """Refuses to resume a run started with another configuration (`config`, a RunConfig,
  read from gin), naming a differing line.

  Reads only: safe on a read-only model_dir.
  """
  path = os.path.join(model_dir, run_files.CONFIG_FILE)
  if not run_files.exists(path):
    return
  saved = _identity_lines(run_files.read_text(path))
  current = _identity_lines(config.gin_text)
  if saved != current:
    differs = ([f'now: {l.strip()}' for l in current if l not in saved] +
               [f'run: {l.strip()}' for l in saved if l not in current])
    raise errors.ConfigError(
        f'{model_dir} holds a run started with a different configuration (see {path}; '
        f'{"; ".join(differs[:2]) or "the lines are in another order"}); resume it with the '
        'same --gin_file/--gin_bindings, or use a new --model_dir')


def record_start(model_dir, resuming, config):
  """Writes config.gin (the gin configuration `config`, a RunConfig, was read from),
  run_config.json (`config` as JSON) and versions.json.

  The caller has checked a resumed run's configuration (check_config) before. versions.json
  keeps the first start's record; each resume (`resuming`) appends to its 'resumes'.
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
      'numerics': _numerics(),
      'source': source(os.path.dirname(os.path.abspath(tf_ipmssl.__file__))),
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


def source(directory):
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


def _numerics():
  """Settings that change float results without changing the configuration."""
  return {
      'cpu_count': os.cpu_count(),
      'cpu': cpu_info.description(),
      'intra_op_threads': tf.config.threading.get_intra_op_parallelism_threads(),
      'inter_op_threads': tf.config.threading.get_inter_op_parallelism_threads(),
      **{name: os.environ.get(name) for name in (
          'TF_NUM_INTRAOP_THREADS', 'TF_NUM_INTEROP_THREADS', 'TF_ENABLE_ONEDNN_OPTS')},
  }


def record_dataset(model_dir, data):
  """What a classifier restored from this run needs without loading the data: dataset.json's
  name, num_classes, image_shape (the critic's input), source, class_names (by label) and
  resize (the rule that brings images of any size to image_shape, image_folder.fit_images;
  null where images come in image_shape)."""
  run_files.write_json(model_dir, run_files.DATASET_FILE, {
      'name': data.name, 'num_classes': int(data.num_classes),
      'image_shape': [int(d) for d in data.image_shape], 'source': data.source,
      'class_names': list(data.class_names),
      'resize': image_folder.RESIZE_RULE if data.resizes_images else None})


def read_dataset(model_dir):
  """dataset.json of the run in model_dir; a run recorded before class_names were gets its
  dataset's (dataset_specs), and no resize rule."""
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


@contextlib.contextmanager
def parsed_run_config(model_dir, skip_unknown=False):
  """Within the block, gin holds the configuration the run in model_dir was started with
  (its config.gin) and nothing else; afterwards, the process's own again.

  The program registers the gin configurables first (it imports `tf_ipmssl.configurables`);
  skip_unknown ignores bindings of configurables not registered in this process.
  """
  path = os.path.join(model_dir, run_files.CONFIG_FILE)
  if not run_files.exists(path):
    raise errors.UserError(f'{model_dir} is not a tf_ipmssl run directory (no {path})')
  with _private_gin_configuration():
    with gin.unlock_config():
      gin.parse_config_file(path, skip_unknown=skip_unknown)
    yield


@contextlib.contextmanager
def _private_gin_configuration():
  """An empty gin configuration for the block, the process's put back afterwards.

  gin keeps one global configuration and has no public way to set it aside, so its state
  (bindings, imports, operative config, singletons, lock) is saved and restored here.
  """
  state = gin.config
  saved = ({key: dict(values) for key, values in state._CONFIG.items()},  # pylint: disable=protected-access
           set(state._IMPORTS), dict(state._OPERATIVE_CONFIG),  # pylint: disable=protected-access
           dict(state._SINGLETONS), gin.config_is_locked())  # pylint: disable=protected-access
  gin.clear_config()
  try:
    yield
  finally:
    gin.clear_config()
    bindings, imports, operative, singletons, locked = saved
    state._CONFIG.update(bindings)  # pylint: disable=protected-access
    state._IMPORTS.update(imports)  # pylint: disable=protected-access
    state._OPERATIVE_CONFIG.update(operative)  # pylint: disable=protected-access
    state._SINGLETONS.update(singletons)  # pylint: disable=protected-access
    state._set_config_is_locked(locked)  # pylint: disable=protected-access


def bound_value(name, default=None):
  """The value bound to gin parameter `name` ('configurable.parameter'), `default` if unbound."""
  try:
    return gin.query_parameter(name)
  except ValueError:
    return default


def record_operative_config(model_dir, config):
  """operative_config.gin: the gin parameters the run's configuration `config` was read
  from, defaults included."""
  run_files.write_text(os.path.join(model_dir, run_files.OPERATIVE_CONFIG_FILE),
                       config.operative_gin_text)
