"""Sobolev constraint Ω_S = ½ E_P‖∇_x h‖² + ½ E_Q‖∇_x h‖² − 1 (docs/algorithm.md#critic-objective).

Checked against central finite differences of the critic's h with respect to its input
(nonlinear critic, float64) and exactly on a linear critic, where ∇_x v·x = w.
"""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import gradient_checks
from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import formulations
from tf_ipmssl.objectives import sobolev

pytestmark = pytest.mark.numerics


def _component_fn(critic, formulation, component):
  def fn(x):
    out = formulations.critic_outputs(*critic(tf.constant(x), training=True), formulation)
    return out.component(component).numpy()
  return fn


def test_squared_gradient_norms_sum_over_all_but_the_batch_axis():
  g = np.random.default_rng(0).normal(size=(3, 2, 4, 5))
  np.testing.assert_allclose(sobolev.squared_gradient_norms(tf.constant(g)).numpy(),
                             (g**2).reshape(3, -1).sum(-1), rtol=1e-12)


def test_sobolev_omega_and_defaults():
  assert sobolev.sobolev_omega(3.0, 1.0) == pytest.approx(1.0)
  constraint = sobolev.Sobolev()
  assert (constraint.component, constraint.penalty_weight, constraint.name) == ('f', 1e-8, 'sobolev_f')
  assert constraint.needs_gradients_at_data and not constraint.needs_gradients_at_interpolates


@pytest.mark.parametrize('formulation,component', [
    ('plain', 'f'), ('kplus1', 'f'), ('kplus1', 'f_pos'), ('kplus1_entropy', 'f'),
    ('kplus1_entropy', 'f_pos'), ('kplus1', 'f_neg')])
def test_numpy_input_gradients_match_finite_differences(formulation, component):
  """The closed forms the NumPy reference uses, validated once against the critic itself."""
  critic = tiny_critics.MlpCritic(seed=7)
  x = tiny_critics.random_batches(seed=1)[2]
  expected = gradient_checks.finite_difference_input_gradients(
      _component_fn(critic, formulation, component), x)
  actual = numpy_reference.NumpyMlp(critic.numpy_params()).input_gradient(
      x, component, formulation)
  np.testing.assert_allclose(actual, expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize('formulation,component,has_batch_norm', [
    ('plain', 'f', False),
    ('kplus1', 'f', False),
    ('kplus1', 'f', True),
    ('kplus1', 'f_pos', False),
    ('kplus1', 'f_neg', True),
    ('kplus1_entropy', 'f', True),
])
def test_sobolev_omega_matches_finite_differences(formulation, component, has_batch_norm):
  constraint = sobolev.Sobolev(component)
  critic, batches, result = gradient_checks.one_constraint_objective(
      constraint, formulation, has_batch_norm, critic_seed=2, batch_seed=3)
  fn = _component_fn(critic, formulation, component)
  sq = [np.mean(numpy_reference.squared_norms(
      gradient_checks.finite_difference_input_gradients(fn, x))) for x in batches[2:]]
  np.testing.assert_allclose(result.omegas[constraint.name].numpy(),
                             0.5 * sq[0] + 0.5 * sq[1] - 1.0, rtol=1e-8)


@pytest.mark.parametrize('formulation,component', [('plain', 'f'), ('kplus1', 'f_neg')])
def test_sobolev_on_linear_critic_is_exact(formulation, component):
  """∇_x <w, x> = w everywhere, so with ‖w‖ = 3: Ω_S = ½·9 + ½·9 − 1 = 8."""
  critic = tiny_critics.random_linear_critic(seed=0, w_norm=3.0)
  constraint = sobolev.Sobolev(component)
  result = gradient_checks.run_critic_objective(
      critic, tiny_critics.random_batches(seed=4), formulation=formulation,
      constraints=[constraint], multipliers={constraint.name: 0.0})
  np.testing.assert_allclose(result.omegas[constraint.name].numpy(), 8.0, rtol=1e-12)


def test_sobolev_on_f_pos_of_linear_critic_matches_closed_form():
  """∇_x f+ = A·∂f+/∂s with ∂f+/∂s_y = p_y (1 + s_y − f+)."""
  critic = tiny_critics.random_linear_critic(seed=1)
  batches = tiny_critics.random_batches(seed=5)
  result = gradient_checks.run_critic_objective(
      critic, batches, formulation='kplus1', constraints=[sobolev.Sobolev('f+')],
      multipliers={'sobolev_f_pos': 0.0})
  model = numpy_reference.NumpyLinear(critic.numpy_params())
  sq = [np.mean(numpy_reference.squared_norms(model.input_gradient(x, 'f_pos', 'kplus1')))
        for x in batches[2:]]
  np.testing.assert_allclose(result.omegas['sobolev_f_pos'].numpy(),
                             0.5 * sq[0] + 0.5 * sq[1] - 1.0, rtol=1e-12)
