"""Generator objective L_G = −E_z[f(g(z))] (SPEC §3) against NumPy."""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import generator_objective


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
