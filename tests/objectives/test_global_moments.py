"""Global-batch moments: two simulated replicas reproduce the one-replica gradient.

Each replica holds half the global batch and minimises its surrogate; the optimizer sums the
replicas' gradients (MirroredStrategy). That sum must be ∇(−L_D) of the full batch, and every
replica must report the full batch's values. The all-reduce is faked: each replica adds the
other replica's local moments, captured in a first pass.
"""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import gradient_checks
from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import global_moments
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev

pytestmark = pytest.mark.numerics


def test_surrogate_gradients_sum_to_the_gradient_of_a_nonlinear_objective():
  """L(m) = m_a² · m_b + sin(m_a) with m = (1/N)Σ over two replicas' data."""
  theta = tf.Variable([0.3, -1.2], dtype=tf.float64)
  data = np.random.default_rng(0).normal(size=(6, 2))

  def local_moments(rows):
    x = tf.constant(data[rows])
    return {'a': tf.reduce_sum(tf.tanh(x @ theta[:, None])) / 6.0,
            'b': tf.reduce_sum(tf.square(x[:, 0] * theta[0] - theta[1])) / 6.0}

  def objective(m):
    return m['a']**2 * m['b'] + tf.sin(m['a']), {}

  halves = [slice(0, 3), slice(3, 6)]
  captured = [{k: v.numpy() for k, v in local_moments(h).items()} for h in halves]
  total = np.zeros(2)
  for replica, rows in enumerate(halves):
    other = captured[1 - replica]
    with tf.GradientTape() as tape:
      surrogate, value, _ = global_moments.objective_of_global_moments(
          local_moments(rows), objective, lambda m, o=other: {k: m[k] + o[k] for k in m})
    total += tape.gradient(surrogate, theta).numpy()
  with tf.GradientTape() as tape:
    full_value, _ = objective(local_moments(slice(0, 6)))
  np.testing.assert_allclose(total, tape.gradient(full_value, theta).numpy(), rtol=1e-12)
  np.testing.assert_allclose(value.numpy(), full_value.numpy(), rtol=1e-12)


def test_replica_all_reduce_is_identity_outside_a_strategy():
  tensors = {'x': tf.constant(2.0)}
  assert global_moments.replica_all_reduce_sum(tensors) is tensors


_CASES = {
    'fisher_f_sobolev_fneg': (
        [fisher.Fisher('f', 0.5), sobolev.Sobolev('f-', 0.4)],
        {'fisher_f': 0.6, 'sobolev_f_neg': -0.3}, False, False),
    'pairwise_fisher_f_gp_per_batch_separate': (
        [fisher.Fisher('f', 0.2), fisher.Fisher('f+', 0.3),
         gradient_penalty.GradientPenalty('f', 1.0, per_example_alpha=False)],
        {'fisher_f': -0.4, 'fisher_f_pos': 0.8}, True, True),
}


@pytest.mark.parametrize('case', sorted(_CASES))
def test_two_replicas_sum_to_the_full_batch_gradient(case):
  constraints, multipliers, pairwise, has_batch_norm = _CASES[case]
  critic = tiny_critics.MlpCritic(has_batch_norm=has_batch_norm, seed=31)
  batches = tiny_critics.random_batches(seed=32, batch_size=6)
  kwargs = dict(formulation='kplus1', constraints=constraints, multipliers=multipliers,
                reference_pairwise_f=pairwise, global_batch_size=6,
                alpha_seed=tf.constant([2, 3]))
  halves = [tuple(b[rows] for b in batches) for rows in (slice(0, 3), slice(3, 6))]

  captured = []
  def capture(moments):
    captured.append({k: v.numpy() for k, v in moments.items()})
    return moments
  for half in halves:
    gradient_checks.run_critic_objective(critic, half, all_reduce_sum=capture, **kwargs)

  total = None
  for replica, half in enumerate(halves):
    other = captured[1 - replica]
    grads, result = gradient_checks.surrogate_gradients(
        critic, half, all_reduce_sum=lambda m, o=other: {k: m[k] + o[k] for k in m}, **kwargs)
    total = grads if total is None else [t + g for t, g in zip(total, grads)]
    replica_values = result.values
  full_grads, full = gradient_checks.surrogate_gradients(critic, batches, **kwargs)
  for variable, got, want in zip(critic.trainable_variables, total, full_grads):
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13, err_msg=variable.path)
  for key, value in full.values.items():
    np.testing.assert_allclose(replica_values[key].numpy(), value.numpy(), rtol=1e-10,
                               err_msg=key)
  # The full batch's objective itself: its value against NumPy, its gradient against central
  # differences of that value.
  alpha = gradient_checks.interpolation_alpha(constraints, 6, kwargs['alpha_seed'])
  expected, _ = numpy_reference.critic_loss(
      numpy_reference.NumpyMlp(critic.numpy_params()), *batches, formulation='kplus1',
      constraints=constraints, multipliers=multipliers, lambda_ce=1.5, alpha=alpha,
      pairwise=pairwise)
  np.testing.assert_allclose(full.values['critic_loss'].numpy(), expected, rtol=1e-10)
  gradient_checks.assert_surrogate_matches_finite_differences(critic, batches, kwargs)
  # A replica that ignored the other's moments would see a different objective.
  _, alone = gradient_checks.surrogate_gradients(critic, halves[0], **kwargs)
  assert abs(alone.values['critic_loss'].numpy() - full.values['critic_loss'].numpy()) > 1e-3
