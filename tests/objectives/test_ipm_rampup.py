"""The IPM ramp-up option: its weight schedule, and −w·IPM in the critic's loss."""
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import gradient_checks
from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import ipm_rampup

pytestmark = pytest.mark.numerics


def test_schedule():
  t = np.array([0, 25, 50, 99, 100, 1000])
  want = np.where(t < 100, np.exp(-5 * (1 - t / 100) ** 2), 1.0)
  np.testing.assert_allclose(ipm_rampup.rampup_weight(t, 100).numpy(), want, rtol=1e-6)
  assert want[0] == pytest.approx(np.exp(-5))


@pytest.mark.parametrize('weight', [0.0, 0.3, 1.0])
def test_weighted_loss_and_gradient(weight):
  """−L_D with −w·IPM in place of −IPM, against NumPy (the IPM computed there); its
  surrogate gradient against central differences of that loss."""
  critic = tiny_critics.MlpCritic(seed=5)
  batches = tiny_critics.random_batches(seed=2)
  constraints = [fisher.Fisher('f', penalty_weight=0.5)]
  kwargs = dict(formulation='kplus1', constraints=constraints,
                multipliers={'fisher_f': tf.Variable(0.2, dtype=tf.float64)},
                ipm_weight=tf.constant(weight, tf.float64))
  result = gradient_checks.run_critic_objective(critic, batches, **kwargs)
  model = numpy_reference.NumpyMlp(critic.numpy_params())
  expected, _ = numpy_reference.critic_loss(
      model, *batches, formulation='kplus1', constraints=constraints,
      multipliers={'fisher_f': 0.2}, lambda_ce=1.5, ipm_weight=weight)
  np.testing.assert_allclose(float(result.values['critic_loss']), expected, rtol=1e-10)
  f = {side: numpy_reference.components(*model.forward(x), 'kplus1')['f']
       for side, x in (('p', batches[2]), ('q', batches[3]))}
  np.testing.assert_allclose(float(result.values['ipm']), f['p'].mean() - f['q'].mean(),
                             rtol=1e-10)
  gradient_checks.assert_surrogate_matches_finite_differences(critic, batches, kwargs)


def test_no_rampup_has_no_weight():
  assert ipm_rampup.rampup_weight(5, None) is None


def test_one_rampup_function():
  """The training code takes the weight from rampup_weight and never tests the setting
  itself."""
  root = pathlib.Path(__file__).resolve().parents[2] / 'tf_ipmssl'
  for path in root.rglob('*.py'):
    if path.name == 'ipm_rampup.py':
      continue
    text = path.read_text()
    assert 'ipm_rampup_updates is None' not in text, path
    assert 'ipm_rampup_updates is not None' not in text, path
