"""Rebuilding a run's classifier from its model_dir (for bin/evaluate and bin/export).

`parse_run_config` parses the run's config.gin with the gin configurables registered so far:
the program that calls it imports `tf_ipmssl.configurables` (this module stays below the
trainer). `bound_value` reads one binding of the parsed config. `load_critic` needs only the
critic's bindings and skips the others.
"""
import os

import gin
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import run_files
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.training import checkpoint_integrity
from tf_ipmssl.training import run_record

CHECKPOINTS = ('latest', 'best')


def parse_run_config(model_dir, skip_unknown=False):
  """Replaces the gin configuration with the one the run in model_dir was started with.

  skip_unknown: ignore bindings of configurables not registered in this process.
  """
  path = os.path.join(model_dir, run_files.CONFIG_FILE)
  if not run_files.exists(path):
    raise errors.UserError(f'{model_dir} is not a tf_ipmssl run directory (no {path})')
  gin.clear_config()
  with gin.unlock_config():
    gin.parse_config_file(path, skip_unknown=skip_unknown)


def bound_value(name, default=None):
  """The value bound to gin parameter `name` ('configurable.parameter'), `default` if unbound."""
  try:
    return gin.query_parameter(name)
  except ValueError:
    return default


def checkpoint_path(model_dir, which='latest'):
  if which not in CHECKPOINTS:
    raise errors.ConfigError(f"checkpoint must be one of {list(CHECKPOINTS)}, got '{which}'")
  directory = run_files.CHECKPOINT_DIR if which == 'latest' else run_files.BEST_CHECKPOINT_DIR
  path = tf.train.latest_checkpoint(os.path.join(model_dir, directory))
  if path is None:
    raise errors.UserError(f'no {which} checkpoint in {model_dir}/{directory}; train first '
                           '(bin/train) or pick the other checkpoint')
  return path


WEIGHTS = ('evaluated', 'trained')


def _averaging_run():
  return bound_value('train.critic_ema_decay') is not None


def load_critic(model_dir, which='latest', weights='evaluated'):
  """The run's critic with weights from its latest or best-on-validation checkpoint.

  weights: 'evaluated' (what the run evaluates, selects and exports: the weight average of a
  run with train.critic_ema_decay, else the critic) or 'trained' (the critic the optimizer
  updates; only the latest checkpoint holds it when a weight average is kept).

  Returns (critic, dataset info dict, checkpoint path).
  """
  if weights not in WEIGHTS:
    raise errors.ConfigError(f'weights must be one of {list(WEIGHTS)}, got {weights!r}')
  parse_run_config(model_dir, skip_unknown=True)
  dataset = run_record.read_dataset(model_dir)
  critic = critic_lib.build_critic(num_classes=dataset['num_classes'],
                                   input_channels=dataset['image_shape'][-1])
  path = checkpoint_path(model_dir, which)
  checkpoint_integrity.check_readable(path)
  # A run with train.critic_ema_decay evaluates (and saves as 'best') the averaged critic.
  saved = {name for name, _ in tf.train.list_variables(path)}
  averaged = any(n.startswith('averaged_critic/') for n in saved)
  key = 'averaged_critic' if averaged else 'critic'
  if weights == 'trained':
    if which == 'best' and _averaging_run():  # best/ keeps the evaluated critic only.
      raise errors.UserError('the trained (not averaged) critic is kept only in the latest '
                             'checkpoint of a run with train.critic_ema_decay; use '
                             '--checkpoint=latest')
    key = 'critic'
  tf.train.Checkpoint(**{key: critic}).restore(path).expect_partial()
  return critic, dataset, path
