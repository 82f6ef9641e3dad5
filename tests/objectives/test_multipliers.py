"""The multiplier rule λ_c ← λ_c + ρ_c·Ω_c (algorithm.md#critic-objective), applied to critic_objective's `omegas`.

Each constraint's own step (`Constraint.update_multiplier`, which the trainer calls after
every critic update) is applied to the returned Ω, and the new λ is checked against NumPy's
λ + ρ·Ω with NumPy's Ω: λ rises when the constraint is violated upwards (Ω > 0) and falls when
Ω < 0. −L_D depends on λ through +λΩ, so ∂(−L_D)/∂λ = Ω. That the trainer applies the step
with each update's own Ω is tests/training/test_training_options.py's.
"""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import gradient_checks
from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev

pytestmark = pytest.mark.numerics


def _constraints():
  return [fisher.Fisher('f', penalty_weight=0.5), sobolev.Sobolev('f_neg', penalty_weight=0.25),
          gradient_penalty.GradientPenalty('f_pos')]


def _scaled_critic(scale):
  critic = tiny_critics.MlpCritic(seed=5)
  for variable in critic.trainable_variables:
    variable.assign(variable * scale)
  return critic


@pytest.mark.parametrize('scale,sign', [(6.0, 1.0), (0.05, -1.0)])
def test_multiplier_moves_with_the_sign_of_omega(scale, sign):
  critic = _scaled_critic(scale)  # Large weights: Ω > 0; tiny weights: E[h²] ≈ 0, Ω ≈ −1.
  batches = tiny_critics.random_batches(seed=2)
  constraints = _constraints()
  multipliers = {'fisher_f': tf.Variable(0.2, dtype=tf.float64),
                 'sobolev_f_neg': tf.Variable(-0.1, dtype=tf.float64)}
  result = gradient_checks.run_critic_objective(
      critic, batches, formulation='kplus1', constraints=constraints, multipliers=multipliers,
      alpha_seed=tf.constant([1, 1]))
  assert set(result.omegas) == {'fisher_f', 'sobolev_f_neg'}  # Not the fixed-weight GP.
  _, expected = numpy_reference.critic_loss(
      numpy_reference.NumpyMlp(critic.numpy_params()), *batches, formulation='kplus1',
      constraints=constraints[:2], multipliers={'fisher_f': 0.2, 'sobolev_f_neg': -0.1},
      lambda_ce=1.5)
  for name, omega in result.omegas.items():
    np.testing.assert_allclose(omega.numpy(), expected[name], rtol=1e-10)
    assert np.sign(omega.numpy()) == sign

  before = {name: lam.numpy() for name, lam in multipliers.items()}
  for constraint in constraints:  # The GP has no multiplier: its step does nothing.
    constraint.update_multiplier(multipliers.get(constraint.name),
                                 result.omegas.get(constraint.name))
  for constraint in constraints[:2]:
    lam = multipliers[constraint.name].numpy()
    np.testing.assert_allclose(lam, before[constraint.name] +
                               constraint.penalty_weight * expected[constraint.name], rtol=1e-12)
    assert np.sign(lam - before[constraint.name]) == sign


def test_loss_is_affine_in_lambda_with_slope_omega():
  """−L_D = … + λΩ + ρ/2 Ω²: the λ update is gradient ascent on λ of ... − λΩ (sign check)."""
  critic = _scaled_critic(2.0)
  batches = tiny_critics.random_batches(seed=3)
  constraints = _constraints()[:2]
  losses = {}
  for lam in (0.0, 1.0):
    result = gradient_checks.run_critic_objective(
        critic, batches, formulation='kplus1', constraints=constraints,
        multipliers={'fisher_f': lam, 'sobolev_f_neg': 0.0})
    losses[lam] = result.values['critic_loss'].numpy()
  _, omegas = numpy_reference.critic_loss(
      numpy_reference.NumpyMlp(critic.numpy_params()), *batches, formulation='kplus1',
      constraints=constraints, multipliers={'fisher_f': 0.0, 'sobolev_f_neg': 0.0},
      lambda_ce=1.5)
  np.testing.assert_allclose(losses[1.0] - losses[0.0], omegas['fisher_f'], rtol=1e-9)


def test_missing_multiplier_is_an_error():
  with pytest.raises(KeyError, match='sobolev_f'):
    gradient_checks.run_critic_objective(
        tiny_critics.MlpCritic(), tiny_critics.random_batches(), formulation='plain',
        constraints=[sobolev.Sobolev()], multipliers={})
