"""`reference_pairwise_f=True`: the released code's broadcast f[i, j] = f+(x_j) − f-(x_i).

docs/algorithm.md#pairwise-f (a slip in the released reference code): Fisher on f becomes the
all-pairs mean of
f², input gradients of Σ_ij f[i, j] are B·∇f(x_k), E[f] and constraints on f+ or f- alone are
unchanged, and the plain critic (f = v·Φ, no broadcast) is unaffected.
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

_SEED = tf.constant([9, 1], tf.int32)


def _pairwise_sum_gradient(model, x, formulation):
  """∂/∂x Σ_ij (f+(x_j) − f-(x_i)) by central differences of the [B, B] NumPy matrix."""
  def pair_sum(x_shift):
    out = numpy_reference.components(*model.forward(x_shift), formulation)
    return np.sum(out['f_pos'][None, :] - out['f_neg'][:, None])
  grad = np.zeros_like(x)
  for index in np.ndindex(x.shape):
    shifted = []
    for sign in (1.0, -1.0):
      x_shift = x.copy()
      x_shift[index] += sign * 1e-5
      shifted.append(pair_sum(x_shift))
    grad[index] = (shifted[0] - shifted[1]) / 2e-5
  return grad


def _run(critic, batches, constraints, pairwise, formulation='kplus1'):
  return gradient_checks.run_critic_objective(
      critic, batches, formulation=formulation, constraints=constraints,
      multipliers={c.name: 0.0 for c in constraints if c.has_multiplier},
      reference_pairwise_f=pairwise, alpha_seed=_SEED)


@pytest.mark.parametrize('formulation', ['kplus1', 'kplus1_entropy'])
def test_fisher_on_f_is_the_all_pairs_mean(formulation):
  critic = tiny_critics.MlpCritic(seed=4)
  batches = tiny_critics.random_batches(seed=5, batch_size=5)
  model = numpy_reference.NumpyMlp(critic.numpy_params())
  pair_means = []
  for x in batches[2:]:
    out = numpy_reference.components(*model.forward(x), formulation)
    matrix = out['f_pos'][None, :] - out['f_neg'][:, None]  # [i, j] = f+(x_j) − f-(x_i).
    assert matrix.shape == (5, 5)
    pair_means.append(np.mean(matrix**2))
  expected = 0.5 * pair_means[0] + 0.5 * pair_means[1] - 1.0
  pairwise = _run(critic, batches, [fisher.Fisher('f')], True, formulation)
  per_sample = _run(critic, batches, [fisher.Fisher('f')], False, formulation)
  np.testing.assert_allclose(pairwise.omegas['fisher_f'].numpy(), expected, rtol=1e-12)
  assert abs(pairwise.omegas['fisher_f'].numpy() - per_sample.omegas['fisher_f'].numpy()) > 1e-3
  # E[f] over the matrix is E[f+] − E[f-]: the IPM term is the per-sample one, in NumPy.
  f = [numpy_reference.components(*model.forward(x), formulation)['f'] for x in batches[2:]]
  np.testing.assert_allclose(pairwise.values['ipm'].numpy(), f[0].mean() - f[1].mean(),
                             rtol=1e-12)


def test_sobolev_on_f_uses_b_times_the_per_sample_gradient():
  """Ω_S = ½(B² E_P‖∇f‖² + B² E_Q‖∇f‖²) − 1, ∇ of the [B, B] sum by finite differences."""
  critic = tiny_critics.random_linear_critic(seed=6)
  batches = tiny_critics.random_batches(seed=7, batch_size=3)
  model = numpy_reference.NumpyLinear(critic.numpy_params())
  b = 3
  sq_pair = [np.mean(numpy_reference.squared_norms(
      _pairwise_sum_gradient(model, x, 'kplus1'))) for x in batches[2:]]
  sq_sample = [np.mean(numpy_reference.squared_norms(model.input_gradient(x, 'f', 'kplus1')))
               for x in batches[2:]]
  np.testing.assert_allclose(sq_pair, [b**2 * s for s in sq_sample], rtol=1e-7)
  pairwise = _run(critic, batches, [sobolev.Sobolev('f')], True)
  per_sample = _run(critic, batches, [sobolev.Sobolev('f')], False)
  np.testing.assert_allclose(pairwise.omegas['sobolev_f'].numpy(),
                             0.5 * sq_pair[0] + 0.5 * sq_pair[1] - 1.0, rtol=1e-7)
  np.testing.assert_allclose(per_sample.omegas['sobolev_f'].numpy(),
                             0.5 * sq_sample[0] + 0.5 * sq_sample[1] - 1.0, rtol=1e-12)


def test_gp_on_f_uses_b_times_the_per_sample_gradient():
  critic = tiny_critics.random_linear_critic(seed=8)
  batches = tiny_critics.random_batches(seed=9, batch_size=3)
  model = numpy_reference.NumpyLinear(critic.numpy_params())
  alpha = gradient_penalty.interpolation_weights(3, _SEED, dtype=tf.float64).numpy()
  x_i = batches[2] + alpha * (batches[3] - batches[2])
  norms = np.sqrt(numpy_reference.squared_norms(_pairwise_sum_gradient(model, x_i, 'kplus1')))
  result = _run(critic, batches, [gradient_penalty.GradientPenalty('f')], True)
  np.testing.assert_allclose(result.values['omega/gp_f'].numpy(), np.mean((norms - 1.0)**2),
                             rtol=1e-7)


def test_constraints_on_f_pos_and_f_neg_are_unaffected():
  critic = tiny_critics.MlpCritic(seed=10)
  batches = tiny_critics.random_batches(seed=11)
  constraints = [fisher.Fisher('f+'), fisher.Fisher('f-'), sobolev.Sobolev('f+'),
                 sobolev.Sobolev('f-'), gradient_penalty.GradientPenalty('f-')]
  on = _run(critic, batches, constraints, True)
  # NumPy's loss and Ω with the per-sample f+ and f- (its pairwise switch acts on f only).
  alpha = gradient_penalty.interpolation_weights(4, _SEED, dtype=tf.float64).numpy()
  expected, omegas = numpy_reference.critic_loss(
      numpy_reference.NumpyMlp(critic.numpy_params()), *batches, formulation='kplus1',
      constraints=constraints, multipliers={c.name: 0.0 for c in constraints},
      lambda_ce=1.5, alpha=alpha, pairwise=True)
  np.testing.assert_allclose(on.values['critic_loss'].numpy(), expected, rtol=1e-10)
  assert {k for k in on.values if k.startswith('omega/')} == {f'omega/{n}' for n in omegas}
  for name, omega in omegas.items():
    np.testing.assert_allclose(on.values[f'omega/{name}'].numpy(), omega, rtol=1e-9,
                               atol=1e-12, err_msg=name)


def test_plain_critic_has_no_broadcast():
  """The released plain critic's f = v·Φ is [B, 1] alone: nothing to broadcast against."""
  critic = tiny_critics.random_linear_critic(seed=12, w_norm=3.0)
  batches = tiny_critics.random_batches(seed=13)
  constraints = [fisher.Fisher('f'), sobolev.Sobolev('f'), gradient_penalty.GradientPenalty('f')]
  on = _run(critic, batches, constraints, True, 'plain')
  off = _run(critic, batches, constraints, False, 'plain')
  for key, value in off.values.items():
    np.testing.assert_allclose(on.values[key].numpy(), value.numpy(), rtol=1e-14, err_msg=key)
  np.testing.assert_allclose(on.values['omega/sobolev_f'].numpy(), 8.0, rtol=1e-12)
  np.testing.assert_allclose(on.values['omega/gp_f'].numpy(), 4.0, rtol=1e-10)
