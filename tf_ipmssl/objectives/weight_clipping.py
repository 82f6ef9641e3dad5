"""WGAN weight clipping: after every critic update, clip every weight to [−c, c].

See docs/algorithm.md#weight-clipping-wgan.
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint


def clip_weights(variables, clip_value):
  """Clips each variable in place to [−clip_value, clip_value]."""
  for variable in variables:
    variable.assign(tf.clip_by_value(variable, -clip_value, clip_value))


@dataclasses.dataclass(frozen=True)
class WeightClipping(constraint.Constraint):
  """Clipping of every critic weight to [−clip_value, clip_value] (c = 0.01) after each update.

  It acts on the whole critic, so `component` is always f. It has no Ω and no loss term.
  """
  component: str = 'f'
  clip_value: float = 0.01

  kind = 'clip'

  def __post_init__(self):
    super().__post_init__()
    errors.check_number('WeightClipping.clip_value', self.clip_value, low=0.0,
                        low_inclusive=False)

  def after_update(self, critic):
    clip_weights(critic.trainable_variables, self.clip_value)
