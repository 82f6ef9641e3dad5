"""Fisher constraint Ω_F = ½ E_P[h²] + ½ E_Q[h²] − 1 (algorithm.md#critic-objective) against NumPy."""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import gradient_checks
from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import sobolev

pytestmark = pytest.mark.numerics


def test_fisher_omega_known_values():
  assert fisher.fisher_omega(2.0, 4.0) == pytest.approx(2.0)
  assert fisher.fisher_omega(1.0, 1.0) == pytest.approx(0.0)
  assert fisher.fisher_omega(0.0, 0.0) == pytest.approx(-1.0)


def test_second_moment_is_a_local_contribution_to_the_global_mean():
  h = np.random.default_rng(0).normal(size=6)
  # This replica holds 6 of a global batch of 12.
  np.testing.assert_allclose(fisher.second_moment(tf.constant(h), 12.0).numpy(),
                             np.sum(h**2) / 12.0, rtol=1e-12)


def test_pairwise_moments_give_the_all_pairs_mean():
  rng = np.random.default_rng(1)
  f_pos, f_neg = rng.normal(size=5), rng.normal(size=5) + 0.7
  parts = fisher.pairwise_second_moment_parts(tf.constant(f_pos), tf.constant(f_neg), 5.0)
  matrix = f_pos[None, :] - f_neg[:, None]  # [i, j] = f+(x_j) − f-(x_i).
  np.testing.assert_allclose(fisher.pairwise_second_moment(parts).numpy(),
                             np.mean(matrix**2), rtol=1e-12)


def test_fisher_constraint_defaults():
  constraint = fisher.Fisher()
  assert (constraint.component, constraint.penalty_weight, constraint.name) == ('f', 1e-7, 'fisher_f')
  assert constraint.has_multiplier
  assert fisher.Fisher('f-').name == 'fisher_f_neg'


@pytest.mark.parametrize('formulation,component,has_batch_norm', [
    ('plain', 'f', False),
    ('kplus1', 'f', False),
    ('kplus1', 'f_pos', True),
    ('kplus1', 'f_neg', False),
    ('kplus1_entropy', 'f', True),
    ('kplus1_entropy', 'f_pos', False),
])
def test_fisher_omega_in_critic_objective_matches_numpy(formulation, component, has_batch_norm):
  constraint = fisher.Fisher(component)
  critic, batches, result = gradient_checks.one_constraint_objective(
      constraint, formulation, has_batch_norm, critic_seed=3, batch_seed=5)
  model = numpy_reference.NumpyMlp(critic.numpy_params())
  h = {side: numpy_reference.components(*model.forward(x), formulation)[component]
       for side, x in (('p', batches[2]), ('q', batches[3]))}
  expected = 0.5 * np.mean(h['p']**2) + 0.5 * np.mean(h['q']**2) - 1.0
  np.testing.assert_allclose(result.omegas[constraint.name].numpy(), expected, rtol=1e-12)
  np.testing.assert_allclose(result.values[f'omega/{constraint.name}'].numpy(), expected,
                             rtol=1e-12)


def test_fisher_and_sobolev_on_same_component_are_independent():
  """Both on f: each Ω is its own NumPy value (neither term sees the other), and the loss with
  both multipliers is NumPy's."""
  critic = tiny_critics.MlpCritic(seed=4)
  batches = tiny_critics.random_batches(seed=6)
  constraints = [fisher.Fisher('f', 0.3), sobolev.Sobolev('f', 0.2)]
  multipliers = {'fisher_f': 0.7, 'sobolev_f': -0.4}
  result = gradient_checks.run_critic_objective(
      critic, batches, formulation='kplus1', constraints=constraints, multipliers=multipliers)
  expected, omegas = numpy_reference.critic_loss(
      numpy_reference.NumpyMlp(critic.numpy_params()), *batches, formulation='kplus1',
      constraints=constraints, multipliers=multipliers, lambda_ce=1.5)
  assert set(result.omegas) == set(omegas) == {'fisher_f', 'sobolev_f'}
  for name, omega in omegas.items():
    np.testing.assert_allclose(result.omegas[name].numpy(), omega, rtol=1e-10, err_msg=name)
  np.testing.assert_allclose(result.values['critic_loss'].numpy(), expected, rtol=1e-10)
