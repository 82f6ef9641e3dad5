"""Central finite differences and a one-call wrapper around `critic_objective` for the tests."""
import numpy as np
import tensorflow as tf

from tests.objectives import tiny_critics
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import critic_objective as critic_objective_lib


def run_critic_objective(critic, batches, **kwargs):
  """critic_objective on NumPy batches (x_l, y_l, x_p, x_q); B defaults to len(x_p)."""
  x_l, y_l, x_p, x_q = batches
  kwargs.setdefault('global_batch_size', len(x_p))
  kwargs.setdefault('lambda_ce', 1.5)
  kwargs.setdefault('multipliers', {})
  return critic_objective_lib.critic_objective(
      critic, tf.constant(x_l), tf.constant(y_l), tf.constant(x_p), tf.constant(x_q),
      **kwargs)


def one_constraint_objective(constraint, formulation, has_batch_norm, critic_seed,
                             batch_seed):
  """A tiny MLP critic, random batches and the objective with `constraint` alone (λ = 0)."""
  critic = tiny_critics.MlpCritic(has_batch_norm=has_batch_norm, seed=critic_seed)
  batches = tiny_critics.random_batches(seed=batch_seed)
  result = run_critic_objective(critic, batches, formulation=formulation,
                                constraints=[constraint], multipliers={constraint.name: 0.0})
  return critic, batches, result


def surrogate_gradients(critic, batches, **kwargs):
  """(∇ of surrogate_loss w.r.t. critic.trainable_variables as NumPy, the ObjectiveResult)."""
  with tf.GradientTape() as tape:
    result = run_critic_objective(critic, batches, **kwargs)
  grads = tape.gradient(result.surrogate_loss, critic.trainable_variables)
  return [g.numpy() for g in grads], result


def finite_difference_gradients(loss_fn, variables, step=1e-5):
  """Central differences (L(w + h e_i) − L(w − h e_i)) / 2h for every weight of `variables`."""
  grads = []
  for variable in variables:
    base = variable.numpy()
    grad = np.zeros_like(base)
    for index in np.ndindex(base.shape):
      values = []
      for sign in (1.0, -1.0):
        shifted = base.copy()
        shifted[index] += sign * step
        variable.assign(shifted)
        values.append(float(loss_fn()))
      grad[index] = (values[0] - values[1]) / (2.0 * step)
    variable.assign(base)
    grads.append(grad)
  return grads


def finite_difference_input_gradients(fn, x, step=1e-5):
  """∂fn(x)_b/∂x_b [B, ...] for a per-example fn: [B, ...] -> [B] with no cross-example terms.

  Each input coordinate is shifted in every example at once (2 calls per coordinate).
  """
  grad = np.zeros_like(x)
  for index in np.ndindex(x.shape[1:]):
    shifted = []
    for sign in (1.0, -1.0):
      x_shift = x.copy()
      x_shift[(slice(None),) + index] += sign * step
      shifted.append(np.asarray(fn(x_shift)))
    grad[(slice(None),) + index] = (shifted[0] - shifted[1]) / (2.0 * step)
  return grad


def assert_surrogate_matches_finite_differences(critic, batches, kwargs):
  """The surrogate loss's gradients equal central differences of values['critic_loss']
  (itself checked against numpy_reference.critic_loss)."""
  grads, _ = surrogate_gradients(critic, batches, **kwargs)
  expected = finite_difference_gradients(
      lambda: run_critic_objective(critic, batches, **kwargs).values['critic_loss'],
      critic.trainable_variables)
  for variable, grad, fd in zip(critic.trainable_variables, grads, expected):
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8, err_msg=variable.path)


def interpolation_alpha(constraints, batch_size, alpha_seed):
  """The α (float64, NumPy) the objective draws from `alpha_seed` for the gradient penalty
  among `constraints`: one per example, or one per batch where that penalty says so."""
  gps = [c for c in constraints if c.kind == 'gp']
  return gradient_penalty.interpolation_weights(
      batch_size, alpha_seed, per_example=gps[0].per_example_alpha if gps else True,
      dtype=tf.float64).numpy()
