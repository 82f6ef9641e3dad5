"""Which tf.distribute strategy a run uses (design card: MirroredStrategy on several GPUs).

- 'auto': MultiWorkerMirroredStrategy when TF_CONFIG names several workers, MirroredStrategy
  when more than one GPU is visible, the default (single-device) strategy otherwise.
- 'mirrored': MirroredStrategy over `devices` (all GPUs when None; e.g. two logical CPUs in
  tests), 'multi_worker', or 'default'.
"""
import dataclasses
import json
import os
from typing import Optional, Tuple

import tensorflow as tf

from tf_ipmssl import builder_settings
from tf_ipmssl import errors

STRATEGIES = ('auto', 'default', 'mirrored', 'multi_worker')


def _tf_config_workers():
  try:
    config = json.loads(os.environ.get('TF_CONFIG', '{}'))
  except json.JSONDecodeError as e:
    raise errors.ConfigError(f'TF_CONFIG is not valid JSON: {e}') from None
  return len(config.get('cluster', {}).get('worker', []))


@dataclasses.dataclass(frozen=True)
class MakeStrategy:
  """The distribution settings, `make_strategy.*` in gin (module doc)."""
  # One of STRATEGIES.
  kind: str = 'auto'
  # The devices of 'mirrored' (None: every GPU).
  devices: Optional[Tuple[str, ...]] = None

  def __post_init__(self):
    if self.kind not in STRATEGIES:
      raise errors.ConfigError(f"unknown distribution '{self.kind}'; use one of "
                               f'{list(STRATEGIES)}')


def make_strategy(settings: MakeStrategy):
  """Returns the tf.distribute.Strategy for this run."""
  kind = settings.kind
  if kind == 'auto':
    if _tf_config_workers() > 1:
      kind = 'multi_worker'
    elif len(tf.config.list_logical_devices('GPU')) > 1:
      kind = 'mirrored'
    else:
      kind = 'default'
  if kind == 'multi_worker':
    return tf.distribute.MultiWorkerMirroredStrategy()
  if kind == 'mirrored':
    return tf.distribute.MirroredStrategy(devices=settings.devices)
  return tf.distribute.get_strategy()


# make_strategy.* in gin: its settings, read into the run configuration (run_config.py).
GROUP = builder_settings.Group.of_dataclass('make_strategy', MakeStrategy)
