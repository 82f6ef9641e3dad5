"""Generator objective L_G = −E_z[f(g(z))] (docs/algorithm.md#critic-objective) against NumPy."""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import generator_objective

pytestmark = pytest.mark.numerics


@pytest.mark.parametrize('formulation', ['plain', 'kplus1', 'kplus1_entropy'])
def test_generator_loss_is_minus_mean_f(formulation):
  critic = tiny_critics.MlpCritic(seed=41)
  x_fake = tiny_critics.random_batches(seed=42, batch_size=6)[3]
  model = numpy_reference.NumpyMlp(critic.numpy_params())
  f = numpy_reference.components(*model.forward(x_fake), formulation)['f']
  loss = generator_objective.generator_objective(
      critic, tf.constant(x_fake), formulation=formulation, global_batch_size=6)
  np.testing.assert_allclose(loss.numpy(), -np.mean(f), rtol=1e-12)
  # A replica holding 6 of 12 examples contributes −Σ f / 12.
  half = generator_objective.generator_objective(
      critic, tf.constant(x_fake), formulation=formulation, global_batch_size=12)
  np.testing.assert_allclose(half.numpy(), -np.sum(f) / 12.0, rtol=1e-12)


@pytest.mark.parametrize('formulation', ['plain', 'kplus1'])
def test_generator_gradient_reaches_the_images(formulation):
  """∂L_G/∂x_fake = −∇f(x)/B: what flows back into the generator."""
  critic = tiny_critics.MlpCritic(seed=43)
  x_fake = tf.constant(tiny_critics.random_batches(seed=44)[3])
  with tf.GradientTape() as tape:
    tape.watch(x_fake)
    loss = generator_objective.generator_objective(
        critic, x_fake, formulation=formulation, global_batch_size=4)
  expected = -numpy_reference.NumpyMlp(critic.numpy_params()).input_gradient(
      x_fake.numpy(), 'f', formulation) / 4.0
  np.testing.assert_allclose(tape.gradient(loss, x_fake).numpy(), expected, rtol=1e-10)


def test_feature_matching_value_and_gradient():
  """L_G = ‖mean Φ(x_real) − mean Φ(x_fake)‖² in NumPy; its gradient reaches x_fake only
  (central differences) and never x_real."""
  from tf_ipmssl.networks import critic as critic_lib  # pylint: disable=g-import-not-at-top
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=0.0625), 10, 1, seed=3)
  rng = np.random.default_rng(0)
  x_real = tf.constant(rng.uniform(-1, 1, [4, 32, 32, 1]), tf.float32)
  x_fake = tf.Variable(rng.uniform(-1, 1, [4, 32, 32, 1]), dtype=tf.float32)

  def loss_value():
    return generator_objective.feature_matching_objective(
        critic, x_real, x_fake, global_batch_size=4, training=False)[1]

  phi_r = critic.features(x_real).numpy().astype(np.float64)
  phi_f = critic.features(x_fake).numpy().astype(np.float64)
  expected = np.sum((phi_r.mean(0) - phi_f.mean(0)) ** 2)
  np.testing.assert_allclose(float(loss_value()), expected, rtol=1e-4)
  real = tf.Variable(x_real)
  with tf.GradientTape(persistent=True) as tape:
    surrogate, _ = generator_objective.feature_matching_objective(
        critic, real, x_fake, global_batch_size=4, training=False)
  assert tape.gradient(surrogate, real) is None
  grad = tape.gradient(surrogate, x_fake).numpy()
  # Central differences at the 5 coordinates with the largest gradients.
  for index in np.argsort(-np.abs(grad).ravel())[:5]:
    index = np.unravel_index(index, grad.shape)
    base = x_fake.numpy()
    values = []
    for sign in (1, -1):
      shifted = base.copy()
      shifted[index] += sign * 1e-2
      x_fake.assign(shifted)
      values.append(float(loss_value()))
    x_fake.assign(base)
    np.testing.assert_allclose((values[0] - values[1]) / 2e-2, grad[index], rtol=0.05)
