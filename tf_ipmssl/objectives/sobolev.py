"""Sobolev IPM constraint: Ω_S = ½ E_P[‖∇_x h‖²] + ½ E_Q[‖∇_x h‖²] − 1.

‖·‖² sums over all pixels and channels of one image; the gradients are taken at the real
and at the generated points (μ = (P+Q)/2) with create-graph semantics (nested tape). See
docs/algorithm.md#sobolev.
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl.objectives import constraint


def squared_gradient_norms(input_gradients):
  """Per-example ‖∇_x h‖², summing over every axis but the batch axis."""
  return tf.reduce_sum(tf.square(input_gradients), axis=tf.range(1, tf.rank(input_gradients)))


def sobolev_omega(mean_sq_grad_real, mean_sq_grad_fake):
  return 0.5 * mean_sq_grad_real + 0.5 * mean_sq_grad_fake - 1.0


@dataclasses.dataclass(frozen=True)
class Sobolev(constraint.AugmentedLagrangianConstraint):
  """Sobolev constraint on component h with multiplier λ_S and penalty ρ_S (paper: 1e-8)."""
  penalty_weight: float = 1e-8

  kind = 'sobolev'
  needs_gradients_at_data = True

  def local_moments(self, inputs):
    """E_P[‖∇_x h‖²] and E_Q[‖∇_x h‖²]."""
    return {f'{self.name}/{side}': tf.reduce_sum(squared_gradient_norms(
        inputs.input_gradients[side])) / inputs.global_batch_size
            for side in (constraint.REAL, constraint.FAKE)}

  def omega(self, moments):
    return sobolev_omega(moments[f'{self.name}/{constraint.REAL}'],
                         moments[f'{self.name}/{constraint.FAKE}'])
