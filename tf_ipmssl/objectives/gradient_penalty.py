"""WGAN-GP: Ω_GP = E_x̃[(‖∇_x h(x̃)‖ − 1)²], x̃ = x_p + α (x_q − x_p), weight λ_GP.

See docs/algorithm.md#wgan-gp.
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint

# Inside the square root: ‖∇h‖ can be exactly zero (e.g. a dead critic), where sqrt has no
# gradient. 1e-12 moves a unit-norm gradient's penalty by ~1e-12.
NORM_EPSILON = 1e-12


def interpolation_weights(batch_size, seed, per_example=True, dtype=tf.float32):
  """α ~ U[0, 1], one per example (default) or one for the whole batch (the reference code).

  Philox explicitly, as every stream of random_streams (under XLA the draws still differ
  from the plain graph's: see that module).
  """
  shape = [batch_size, 1, 1, 1] if per_example else [1, 1, 1, 1]
  return tf.random.stateless_uniform(shape, seed=seed, dtype=dtype, alg='philox')


def interpolates(x_real, x_fake, alpha):
  return x_real + alpha * (x_fake - x_real)


def gradient_penalty_terms(input_gradients):
  """Per-example (‖∇_x h(x̃)‖ − 1)², ε inside the square root."""
  sq_norm = tf.reduce_sum(tf.square(input_gradients),
                          axis=tf.range(1, tf.rank(input_gradients)))
  return tf.square(tf.sqrt(sq_norm + NORM_EPSILON) - 1.0)


@dataclasses.dataclass(frozen=True)
class GradientPenalty(constraint.Constraint):
  """WGAN-GP on component h with fixed weight λ_GP (10) and α per example or per batch."""
  component: str = 'f'
  weight: float = 10.0
  per_example_alpha: bool = True

  kind = 'gp'
  needs_gradients_at_interpolates = True

  def __post_init__(self):
    super().__post_init__()
    errors.check_number('GradientPenalty.weight', self.weight, low=0.0)

  def local_moments(self, inputs):
    """E_x̃[(‖∇_x h(x̃)‖ − 1)²] at the interpolates."""
    return {self.name: tf.reduce_sum(gradient_penalty_terms(
        inputs.input_gradients[constraint.INTERPOLATES])) / inputs.global_batch_size}

  def omega(self, moments):
    return moments[self.name]

  def penalty(self, omega, multiplier):
    """λ_GP·Ω_GP: a fixed weight, no multiplier."""
    del multiplier
    return self.weight * omega
