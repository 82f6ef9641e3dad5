"""What a run writes to TensorBoard, and how its curves are read back.

- train/, eval/ (run_files.TRAIN_SUMMARY_DIR, EVAL_SUMMARY_DIR): the logged scalars
  (`write_scalars`) and the generator's sample grid (`image_grid`); run_dir/event_files.py
  reads them back.
- hparams/ (run_files.HPARAMS_DIR): a run's hyperparameters and final metrics in
  TensorBoard's HParams dashboard.

A finished run writes one HParams session into MODEL_DIR/hparams/: the hyperparameters that
tell the paper's cells and seeds apart (the cell and preset gin files, the algorithm, IPM,
its constraints and the critic output each acts on, normalization, the seeds, the label
count, the preset's scale, and the algorithm's own settings by gin name: `ssl.formulation`,
`ssl.lambda_ce`, ...) and the run's final numbers as scalars. `tensorboard --logdir
SWEEP_ROOT` then shows every finished run of a sweep as one row of the HParams dashboard's
table (sortable by any column) and as a line of its parallel coordinates view.

Everything is read from the run's own files (run_config.json, versions.json's command
line, metrics.json), so the trainer writes it after its final metrics.json and nothing it
writes here feeds back into training. `session(...)` takes the same values directly, for
runs known only from a results table.
"""
import dataclasses
import math
import os
import re
from typing import Sequence

import numpy as np
import tensorflow as tf
from tensorboard.plugins.hparams import api as hp

from tf_ipmssl.data import augmentation as augmentation_lib
from tf_ipmssl.data import ssl_data_settings
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.run_dir import config_formats
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.training import algorithms


def image_grid(images, columns=8):
  """Tiles [N, H, W, C] images in [-1, 1] into one [1, rows·H, columns·W, C] image in [0, 1]."""
  images = np.asarray(images, np.float32)
  n, h, w, c = images.shape
  rows = int(math.ceil(n / columns))
  grid = np.zeros([rows * h, columns * w, c], np.float32)
  for i in range(n):
    r, col = divmod(i, columns)
    grid[r * h:(r + 1) * h, col * w:(col + 1) * w] = images[i]
  return ((np.clip(grid, -1.0, 1.0) + 1.0) / 2.0)[None]


def write_scalars(writer, step, scalars):
  with writer.as_default(step=step):
    for name, value in scalars.items():
      tf.summary.scalar(name, value)
  writer.flush()


# The hyperparameters every run has (the dashboard sorts its columns by name), with what
# each one is; `columns()` adds the algorithms' settings.
HPARAMS = (
    ('cell', "the paper cell's gin file (gin/<cell>.gin)"),
    ('preset', 'the gin files applied after the cell (a preset)'),
    ('dataset', 'build_ssl_data.dataset'),
    ('labels', 'labeled examples (build_ssl_data.num_labeled; absent: all)'),
    ('algorithm', 'train.mode: the registered algorithm (ssl, supervised, ...)'),
    ('ipm', 'the constraints\' IPMs, e.g. Fisher + Sobolev'),
    ('constraints', 'each constraint and the critic output it acts on, e.g. Fisher(f)'),
    ('normalization', 'build_critic.normalization'),
    ('seed', 'train.seed (init, shuffling, noise, dropout)'),
    ('split_seed', 'build_ssl_data.split_seed (which examples are labeled)'),
    ('critic_updates', 'training length in critic updates'),
    ('width', "the critic's width multiplier"),
    ('learning_rate_scale', 'multiplies both learning rates (a preset\'s scale)'),
    ('critic_rate', "the critic's learning rate as used"),
    ('critic_ema_decay', "the critic's weight average (absent: none)"),
    ('augmentation', 'the augmented training streams (augmentation.*; none: the paper)'),
)
# The metrics: scalar tags of the session's events, with what each one is.
METRICS = (
    ('test_error', 'test error (%) at the best validation step: the number to report'),
    ('test_balanced_error', 'the mean of the classes\' test errors (%) at the best validation '
     'step (docs/algorithm.md#per-class-results)'),
    ('validation_error', 'best validation error (%)'),
    ('final_test_error', 'test error (%) at the last step'),
    ('labeled_error', 'error (%) on the labeled training images at the best step'),
    ('steps', 'steps trained'),
    ('wall_seconds', "the run's wall time (s)"),
)


def _defaults(settings, names):
  return {name: getattr(settings, name) for name in names}


# The builders' defaults, for a setting a run_config.json lacks (an older one holds a
# builder's settings only where the run's gin files bind them: config_formats.py).
_DATA_DEFAULTS = _defaults(ssl_data_settings.BuildSslData(), ('num_labeled', 'split_seed'))
_CRITIC_DEFAULTS = _defaults(critic_lib.BuildCritic(), ('normalization', 'width'))
# How the dashboard names each constraint type's IPM.
_IPM_NAMES = {'Fisher': 'Fisher', 'Sobolev': 'Sobolev', 'GradientPenalty': 'WGAN-GP',
              'WeightClipping': 'WGAN clip'}


def columns():
  """(name, description) of every hyperparameter: HPARAMS, then each setting of each
  registered algorithm (the library's, library.ALGORITHMS, first) that holds one value (a
  sequence, such as ssl.constraints, is shown by the 'ipm' and 'constraints' columns), by
  gin name."""
  return HPARAMS + tuple(
      (f'{name}.{f.name}', f"the {name} algorithm's setting {f.name} (gin {name}.{f.name})")
      for name in algorithms.REGISTRY.names()
      for f in dataclasses.fields(algorithms.get_algorithm(name).Settings)
      if not isinstance(f.default, (tuple, list)))


def experiment_config():
  """The experiment summary: the columns above."""
  return hp.hparams_config(
      hparams=[hp.HParam(name, description=text) for name, text in columns()],
      metrics=[hp.Metric(name, display_name=name, description=text)
               for name, text in METRICS])


def cell_and_preset(gin_files: Sequence[str]):
  """(cell, preset) from a run's gin files: the first relative to gin/, without .gin."""
  names = [re.sub(r'^(.*/)?gin/', '', f).removesuffix('.gin') for f in gin_files]
  return (names[0] if names else ''), ' + '.join(names[1:])


def hparams_of(run_config: dict, gin_files: Sequence[str]) -> dict:
  """The hyperparameters of a run from its run_config.json (any format version) and gin
  files (None: absent)."""
  content = config_formats.upgrade(run_config)
  train = content['train']
  settings = content.get(train['mode'], {})
  data = {**_DATA_DEFAULTS, **content.get('build_ssl_data', {})}
  critic = {**_CRITIC_DEFAULTS, **content.get('build_critic', {})}
  constraints = settings.get('constraints', [])
  cell, preset = cell_and_preset(gin_files)
  ipms = [_IPM_NAMES.get(c['type'], c['type']) for c in constraints]
  scale = train.get('learning_rate_scale', 1.0)
  rate = train.get('critic_learning_rate')
  return {
      'cell': cell,
      'preset': preset,
      'dataset': data.get('dataset'),
      'labels': data['num_labeled'],
      'algorithm': train['mode'],
      'ipm': ' + '.join(dict.fromkeys(ipms)) or 'none',
      'constraints': ' + '.join(f"{c['type']}({c['component']})" if 'component' in c
                                else c['type'] for c in constraints) or 'none',
      'normalization': critic['normalization'],
      'seed': train['seed'],
      'split_seed': data['split_seed'],
      'critic_updates': train.get('critic_updates'),
      'width': critic['width'],
      'learning_rate_scale': scale,
      'critic_rate': None if rate is None else rate * scale,
      'critic_ema_decay': train.get('critic_ema_decay'),
      'augmentation': augmentation_lib.describe(augmentation_lib.per_stream(
          augmentation_lib.Augmentations(**content.get('augmentation', {})))),
      **{f"{train['mode']}.{name}": value for name, value in settings.items()
         if not isinstance(value, (list, dict))},
  }


def metrics_of(metrics: dict) -> dict:
  """The final metrics of a run from its metrics.json (None: not measured)."""
  best, last = metrics.get('best') or {}, metrics.get('final') or {}
  return {
      'test_error': best.get('test_error', last.get('test_error')),
      'test_balanced_error': (best.get('test_balanced_error')
                              if best.get('test_error') is not None
                              else last.get('test_balanced_error')),
      'validation_error': best.get('validation_error'),
      'final_test_error': last.get('test_error'),
      'labeled_error': best.get('labeled_error', last.get('labeled_error')),
      'steps': metrics.get('step'),
      'wall_seconds': metrics.get('wall_seconds'),
  }


def trial_id(hparams: dict) -> str:
  """The dashboard's name of a run: <cell>/seed_<seed>, as bin/sweep names its directory."""
  return f"{hparams['cell'] or 'run'}/seed_{hparams['seed']}"


def session(logdir: str, hparams: dict, metrics: dict):
  """Writes one HParams session (the experiment's columns, its values, its metrics) to logdir.

  Values that are None are left out (an empty cell in the dashboard).
  """
  writer = tf.summary.create_file_writer(logdir)
  with writer.as_default(step=0):
    experiment_config()
    hp.hparams({k: v for k, v in hparams.items() if v is not None}, trial_id=trial_id(hparams))
    for name, value in metrics.items():
      if value is not None:
        tf.summary.scalar(name, float(value))
  writer.close()


def gin_files_of(model_dir: str) -> list:
  """The --gin_file arguments of the command that started the run (versions.json)."""
  versions = run_files.read_json(model_dir, run_files.VERSIONS_FILE, unreadable_ok=True) or {}
  command = versions.get('command') or []
  files, take_next = [], False
  for arg in command:
    if take_next:
      files.append(arg)
    take_next = arg == '--gin_file'
    if arg.startswith('--gin_file='):
      files.append(arg.split('=', 1)[1])
  return files


def write_run(model_dir: str):
  """Writes MODEL_DIR/hparams/ from the run's run_config.json and metrics.json.

  Replaces what an earlier call wrote there, so the dashboard shows one session per run.
  """
  run_config = run_files.read_json(model_dir, run_files.RUN_CONFIG_FILE)
  metrics = run_files.read_json(model_dir, run_files.METRICS_FILE)
  if run_config is None or metrics is None:
    return
  logdir = os.path.join(model_dir, run_files.HPARAMS_DIR)
  if tf.io.gfile.isdir(logdir):
    tf.io.gfile.rmtree(logdir)
  session(logdir, hparams_of(run_config, gin_files_of(model_dir)), metrics_of(metrics))
