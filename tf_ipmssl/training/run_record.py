"""What a run writes beside its checkpoints so it can be identified and reproduced.

- config.gin: the full gin configuration the run was started with (as text; nothing parses
  it again).
- run_config.json: the validated run configuration (run_config.RunConfig.to_json): every
  train setting as given and as used (scaled learning rates and ρ included) and the data
  and network bindings. The run's identity: `read_run_config` rebuilds the RunConfig from
  it alone, and resuming with a configuration that differs in a setting is refused
  (check_config), so an existing run is never silently mixed with another.
- operative_config.gin: the gin parameters the run's configuration was read from, defaults
  included, written once the first step ran.
- versions.json: (of the first start; each resume appended under 'resumes') library,
  TensorFlow, Keras, Python, NumPy versions, the command line, the library's source (its git
  commit and whether tracked files differ from it, where it runs from a git checkout) and
  what else decides the float results: threads and kernels (`numerics`). The same config
  and seeds on another thread count give another (equally valid) run: summation order
  changes in the last bits and a GAN's trajectory amplifies it. `train.deterministic_ops`
  pins one thread per op for bit-exact repeats; `summation_order_fixed` says the graphs were
  built without Grappler's arithmetic optimizer (graph_rewrites.py), which otherwise sums in
  an order that differs between processes.
- metrics.json: final and best-on-validation errors (written by the trainer).

The file names and their reading and writing are `tf_ipmssl.run_files`'s.
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
from tf_ipmssl import run_files
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import image_folder
from tf_ipmssl.training import cpu_info
from tf_ipmssl.training import graph_rewrites
from tf_ipmssl.training import run_config as run_config_lib

# Bindings that may differ on resume: how a run is observed, how long it goes on, where
# the (same) data files are read from, and what its final line compares with.
_RESUMABLE_CHANGES = ('log_every', 'eval_every', 'checkpoint_every', 'sample_every',
                      'export_classifier', 'keep_checkpoints', 'steps', 'epochs',
                      'eval_batch_size', 'data_dir', 'baseline')


def read_run_config(model_dir) -> run_config_lib.RunConfig:
  """The RunConfig of the run in model_dir, rebuilt from its run_config.json alone
  (config.gin and operative_config.gin are kept as text); gin is neither read nor changed.

  A ConfigError names the file and what it needs (e.g. a constraint type or algorithm this
  process has not registered: import the module that registers it).
  """
  record = run_files.read_json(model_dir, run_files.RUN_CONFIG_FILE)
  if record is None:
    if run_files.exists(os.path.join(model_dir, run_files.CONFIG_FILE)):
      raise errors.UserError(f'{model_dir} has no {run_files.RUN_CONFIG_FILE}: it was written '
                             'by a tf_ipmssl older than the run configuration, which this one '
                             'cannot rebuild; use that version, or train it again')
    raise errors.UserError(f'{model_dir} is not a tf_ipmssl run directory (no '
                           f'{run_files.RUN_CONFIG_FILE})')
  texts = []
  for name in (run_files.CONFIG_FILE, run_files.OPERATIVE_CONFIG_FILE):
    path = os.path.join(model_dir, name)
    texts.append(run_files.read_text(path) if run_files.exists(path) else '')
  try:
    return run_config_lib.RunConfig.from_json(record, *texts)
  except errors.ConfigError as e:
    raise errors.ConfigError(
        f'{os.path.join(model_dir, run_files.RUN_CONFIG_FILE)}: {e}') from None


def check_config(model_dir, config):
  """Refuses to resume a run started with another configuration (`config`, a RunConfig),
  naming the settings that differ from the run's run_config.json (those of
  _RESUMABLE_CHANGES may differ).

  Reads only: safe on a read-only model_dir.
  """
  differing = [(name, run, now) for name, run, now in
               read_run_config(model_dir).differing_settings(config)
               if name.rsplit('.', 1)[1] not in _RESUMABLE_CHANGES]
  if differing:
    listed = '; '.join(f'{name}: run {run!r}, now {now!r}' for name, run, now in differing)
    raise errors.ConfigError(
        f'{model_dir} holds a run started with a different configuration ({listed}; see '
        f'{os.path.join(model_dir, run_files.RUN_CONFIG_FILE)}); resume it with the same '
        '--gin_file/--gin_bindings, or use a new --model_dir')


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


def _numerics():
  """Settings that change float results without changing the configuration."""
  return {
      'cpu_count': os.cpu_count(),
      'cpu': cpu_info.description(),
      'intra_op_threads': tf.config.threading.get_intra_op_parallelism_threads(),
      'inter_op_threads': tf.config.threading.get_inter_op_parallelism_threads(),
      'summation_order_fixed': graph_rewrites.summation_order_fixed(),
      **{name: os.environ.get(name) for name in (
          'TF_NUM_INTRAOP_THREADS', 'TF_NUM_INTEROP_THREADS', 'TF_ENABLE_ONEDNN_OPTS')},
  }


def resize_rule(data):
  """The rule that brings images of any size to the data's image_shape
  (image_folder.fit_images), by name; None where images come in image_shape."""
  return image_folder.resize_rule(data.image_shape[0]) if data.resizes_images else None


def record_dataset(model_dir, data):
  """What a classifier restored from this run needs without loading the data: dataset.json's
  name, num_classes, image_shape (the critic's input), source, class_names (by label) and
  resize (the rule that brings images of any size to image_shape, image_folder.fit_images;
  null where images come in image_shape)."""
  run_files.write_json(model_dir, run_files.DATASET_FILE, {
      'name': data.name, 'num_classes': int(data.num_classes),
      'image_shape': [int(d) for d in data.image_shape], 'source': data.source,
      'class_names': list(data.class_names),
      'resize': resize_rule(data)})


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


def record_operative_config(model_dir, config):
  """operative_config.gin: the gin parameters the run's configuration `config` was read
  from, defaults included."""
  run_files.write_text(os.path.join(model_dir, run_files.OPERATIVE_CONFIG_FILE),
                       config.operative_gin_text)
