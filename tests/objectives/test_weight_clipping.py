"""WGAN weight clipping (algorithm.md#critic-objective): every critic weight in [−c, c] after each update."""
import numpy as np
import pytest

from tests.objectives import gradient_checks
from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import weight_clipping


def test_clip_bounds_every_weight_and_keeps_small_ones():
  critic = tiny_critics.MlpCritic(seed=1)
  rng = np.random.default_rng(0)
  before = []
  for variable in critic.trainable_variables:
    # Half the weights far outside [−c, c], half well inside.
    value = rng.uniform(-0.005, 0.005, size=variable.shape)
    big = rng.random(size=variable.shape) < 0.5
    value[big] = rng.choice([-1.0, 1.0], size=big.sum()) * rng.uniform(0.02, 5.0, big.sum())
    variable.assign(value)
    before.append(value)
  weight_clipping.clip_weights(critic.trainable_variables, 0.01)
  for value, variable in zip(before, critic.trainable_variables):
    after = variable.numpy()
    assert np.all(np.abs(after) <= 0.01)
    small = np.abs(value) <= 0.01
    np.testing.assert_array_equal(after[small], value[small])
    np.testing.assert_array_equal(after[~small], 0.01 * np.sign(value[~small]))


def test_weight_clipping_defaults_and_no_loss_term():
  constraint = weight_clipping.WeightClipping()
  assert (constraint.clip_value, constraint.component, constraint.has_multiplier) == (
      0.01, 'f', False)
  critic = tiny_critics.MlpCritic(seed=2)
  batches = tiny_critics.random_batches(seed=1)
  with_clip = gradient_checks.run_critic_objective(
      critic, batches, formulation='plain', constraints=[fisher.Fisher(), constraint],
      multipliers={'fisher_f': 0.3})
  # Clipping adds no term: the loss is NumPy's with the Fisher constraint alone.
  expected, omegas = numpy_reference.critic_loss(
      numpy_reference.NumpyMlp(critic.numpy_params()), *batches, formulation='plain',
      constraints=[fisher.Fisher()], multipliers={'fisher_f': 0.3}, lambda_ce=1.5)
  np.testing.assert_allclose(with_clip.values['critic_loss'].numpy(), expected, rtol=1e-10)
  assert set(with_clip.omegas) == set(omegas) == {'fisher_f'}


@pytest.mark.numerics
def test_clip_only_critic_is_the_ipm_plus_cross_entropy():
  critic = tiny_critics.random_linear_critic(seed=3)
  batches = tiny_critics.random_batches(seed=2)
  result = gradient_checks.run_critic_objective(
      critic, batches, formulation='plain', constraints=[weight_clipping.WeightClipping()],
      lambda_ce=0.1)
  x_l, y_l, x_p, x_q = (np.asarray(b) for b in batches)
  params = critic.numpy_params()
  logits = x_l.reshape(4, -1) @ params['a'] + params['c']
  ce = np.mean(np.log(np.exp(logits).sum(-1)) - logits[np.arange(4), y_l])
  ipm = np.mean(x_p.reshape(4, -1) @ params['w']) - np.mean(x_q.reshape(4, -1) @ params['w'])
  np.testing.assert_allclose(result.values['critic_loss'].numpy(), -ipm + 0.1 * ce, rtol=1e-12)
  assert result.omegas == {}
