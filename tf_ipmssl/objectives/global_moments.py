"""Objectives that are non-linear functions of means over the global batch.

The critic objective contains terms such as ρ/2·Ω² with Ω = ½E_P[h²] + ½E_Q[h²] − 1, where
the expectations run over the *global* batch (docs/algorithm.md#global-batch-moments; with
several replicas each replica holds a slice). Each replica therefore computes its *local
contribution* m_r to every moment (local sum / global batch size), the contributions are
summed across replicas (m = Σ_r m_r) and the objective L(m) is evaluated on the global
moments.

To differentiate, each replica minimises the surrogate

    L̃_r = Σ_k  stop_gradient(∂L/∂m_k |_m) · m_{r,k}

whose gradients, summed over replicas by the optimizer, equal ∇_θ L(m) exactly (chain rule:
∇L = Σ_k ∂L/∂m_k ∇m_k and ∇m_k = Σ_r ∇m_{r,k}). With one replica, m = m_r and ∇L̃ = ∇L.
The surrogate's *value* is meaningless; report L(m).
"""
from typing import Callable, Mapping

import tensorflow as tf


def identity_all_reduce(tensors):
  return tensors


def replica_all_reduce_sum(tensors):
  """Sums a structure of tensors over the replicas of the current tf.distribute strategy."""
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return tensors
  return context.all_reduce(tf.distribute.ReduceOp.SUM, tensors)


def objective_of_global_moments(
    local_moments: Mapping[str, tf.Tensor],
    objective_fn: Callable[[Mapping[str, tf.Tensor]], tuple[tf.Tensor, dict]],
    all_reduce_sum: Callable = identity_all_reduce):
  """Returns (surrogate loss for this replica, L(m), auxiliary values of objective_fn).

  objective_fn maps global moments to (scalar objective to minimise, dict of values to log).
  """
  local_moments = dict(local_moments)
  global_moments = all_reduce_sum({k: tf.stop_gradient(v) for k, v in local_moments.items()})
  with tf.GradientTape() as tape:
    tape.watch(global_moments)
    value, aux = objective_fn(global_moments)
  sensitivities = tape.gradient(value, global_moments,
                                unconnected_gradients=tf.UnconnectedGradients.ZERO)
  surrogate = tf.add_n([tf.stop_gradient(sensitivities[k]) * local_moments[k]
                        for k in sorted(local_moments)])
  return surrogate, value, aux
