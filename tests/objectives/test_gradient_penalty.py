"""WGAN-GP: Ω_GP = E_x̃[(‖∇_x h(x̃)‖ − 1)²], x̃ = x_p + α (x_q − x_p) (algorithm.md#critic-objective)."""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import gradient_checks
from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import gradient_penalty

pytestmark = pytest.mark.numerics

_SEED = tf.constant([3, 7], tf.int32)


def test_penalty_of_a_known_gradient():
  """‖(3, 4)‖ = 5 gives (5 − 1)² = 16; ‖(0.6, 0.8)‖ = 1 gives 0."""
  grads = tf.constant([[[[3.0, 4.0]]], [[[0.6, 0.8]]]], tf.float64)
  np.testing.assert_allclose(gradient_penalty.gradient_penalty_terms(grads).numpy(),
                             [16.0, 0.0], atol=1e-10)


def test_zero_gradient_has_a_finite_derivative():
  grads = tf.zeros([2, 1, 1, 3], tf.float64)
  with tf.GradientTape() as tape:
    tape.watch(grads)
    terms = gradient_penalty.gradient_penalty_terms(grads)
  np.testing.assert_allclose(terms.numpy(), [1.0, 1.0], atol=1e-5)
  assert np.all(np.isfinite(tape.gradient(terms, grads).numpy()))


def test_defaults():
  constraint = gradient_penalty.GradientPenalty()
  assert (constraint.component, constraint.weight, constraint.per_example_alpha) == (
      'f', 10.0, True)
  assert not constraint.has_multiplier
  assert constraint.needs_gradients_at_interpolates


def test_alpha_per_example_is_uniform_and_differs_between_examples():
  alpha = gradient_penalty.interpolation_weights(4000, _SEED, per_example=True).numpy()
  assert alpha.shape == (4000, 1, 1, 1)
  assert alpha.min() >= 0.0 and alpha.max() <= 1.0
  assert len(np.unique(alpha)) > 3900
  # U[0, 1]: mean 1/2, variance 1/12 (deterministic seed, so no flakiness).
  assert abs(alpha.mean() - 0.5) < 0.02 and abs(alpha.var() - 1.0 / 12.0) < 0.01


def test_alpha_per_batch_is_one_value_for_all_examples():
  rng = np.random.default_rng(0)
  x_p, x_q = rng.normal(size=(2, 6, 2, 2, 1))
  alpha = gradient_penalty.interpolation_weights(6, _SEED, per_example=False, dtype=tf.float64)
  assert alpha.shape == (1, 1, 1, 1) and 0.0 <= float(alpha[0, 0, 0, 0]) <= 1.0
  x_i = gradient_penalty.interpolates(tf.constant(x_p), tf.constant(x_q), alpha).numpy()
  implied = (x_i - x_p) / (x_q - x_p)  # The α each pixel was mixed with.
  np.testing.assert_allclose(implied, float(alpha[0, 0, 0, 0]), rtol=1e-9)


def test_interpolates_per_example_use_each_examples_alpha():
  rng = np.random.default_rng(1)
  x_p, x_q = rng.normal(size=(2, 6, 2, 2, 1))
  alpha = gradient_penalty.interpolation_weights(6, _SEED, dtype=tf.float64).numpy()
  x_i = gradient_penalty.interpolates(tf.constant(x_p), tf.constant(x_q), alpha).numpy()
  np.testing.assert_allclose(x_i, x_p + alpha * (x_q - x_p), rtol=1e-12)
  implied = ((x_i - x_p) / (x_q - x_p)).reshape(6, -1)
  np.testing.assert_allclose(implied, np.repeat(alpha.reshape(6, 1), 4, axis=1), rtol=1e-9)
  assert np.ptp(alpha) > 0.1  # They differ.


@pytest.mark.parametrize('per_example', [True, False])
@pytest.mark.parametrize('formulation,component', [('plain', 'f'), ('kplus1', 'f_neg')])
def test_gp_on_linear_critic_is_exact(formulation, component, per_example):
  """‖∇_x <w, x>‖ = ‖w‖ = 3 at every x̃: Ω_GP = (3 − 1)² = 4, adding 10·4 to −L_D."""
  critic = tiny_critics.random_linear_critic(seed=2, w_norm=3.0)
  batches = tiny_critics.random_batches(seed=3)
  constraint = gradient_penalty.GradientPenalty(component, per_example_alpha=per_example)
  result = gradient_checks.run_critic_objective(
      critic, batches, formulation=formulation, constraints=[constraint], alpha_seed=_SEED)
  np.testing.assert_allclose(result.values[f'omega/{constraint.name}'].numpy(), 4.0,
                             rtol=1e-10)
  assert constraint.name not in result.omegas  # λ_GP is fixed: no multiplier.
  model = numpy_reference.NumpyLinear(critic.numpy_params())
  expected, _ = numpy_reference.critic_loss(
      model, *batches, formulation=formulation, constraints=[], multipliers={},
      lambda_ce=1.5)
  np.testing.assert_allclose(result.values['critic_loss'].numpy(), expected + 40.0,
                             rtol=1e-10)


@pytest.mark.parametrize('formulation,component,has_batch_norm,per_example', [
    ('kplus1', 'f', False, True),
    ('kplus1', 'f_pos', True, True),
    ('kplus1_entropy', 'f_neg', False, False),
    ('plain', 'f', True, False),
])
def test_gp_on_mlp_critic_matches_numpy(formulation, component, has_batch_norm, per_example):
  critic = tiny_critics.MlpCritic(has_batch_norm=has_batch_norm, seed=8)
  batches = tiny_critics.random_batches(seed=9)
  constraint = gradient_penalty.GradientPenalty(component, per_example_alpha=per_example)
  result = gradient_checks.run_critic_objective(
      critic, batches, formulation=formulation, constraints=[constraint], alpha_seed=_SEED)
  alpha = gradient_penalty.interpolation_weights(
      len(batches[2]), _SEED, per_example=per_example, dtype=tf.float64).numpy()
  x_i = batches[2] + alpha * (batches[3] - batches[2])
  grads = numpy_reference.NumpyMlp(critic.numpy_params()).input_gradient(
      x_i, component, formulation)
  expected = np.mean((np.sqrt(numpy_reference.squared_norms(grads)) - 1.0) ** 2)
  np.testing.assert_allclose(result.values[f'omega/{constraint.name}'].numpy(), expected,
                             rtol=1e-9)


def test_alpha_seed_changes_the_interpolates():
  critic = tiny_critics.MlpCritic(seed=8)
  batches = tiny_critics.random_batches(seed=9)
  omegas = [gradient_checks.run_critic_objective(
      critic, batches, formulation='kplus1', constraints=[gradient_penalty.GradientPenalty()],
      alpha_seed=tf.constant(seed, tf.int32)).values['omega/gp_f'].numpy()
            for seed in ([1, 2], [1, 2], [5, 6])]
  assert omegas[0] == omegas[1] and omegas[0] != omegas[2]
