"""Adam with PyTorch's ε placement (the released code's optimizer) and PyTorch's RMSprop (the
WGAN code's) against NumPy references."""
import keras
import numpy as np
import pytest

from tf_ipmssl import errors
from tf_ipmssl.training import optimizers

LR, B1, B2, EPS = 2e-4, 0.5, 0.999, 1e-8
# Keras keeps the learning rate as a float32 variable: the references use that value.
LR32 = float(np.float32(LR))
# Keras's own Adam also rounds the βs to float32 for its bias corrections; its comparison
# allows that (rtol 2e-5). The two ε placements differ by 10-30x on the small gradients of
# the problem, so this still tells them apart.
RTOL = 2e-5
B1_32, B2_32 = (float(np.float32(x)) for x in (B1, B2))


def numpy_adam(theta, gradients, epsilon_on_corrected, betas=(B1, B2)):
  """torch.optim.Adam's update (ε on √v̂) or Keras's (ε on the uncorrected √v), float64."""
  B1, B2 = betas  # pylint: disable=redefined-outer-name,invalid-name
  LR = LR32  # pylint: disable=redefined-outer-name,invalid-name
  m = np.zeros_like(theta)
  v = np.zeros_like(theta)
  for t, g in enumerate(gradients, start=1):
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    m_hat, v_hat = m / (1 - B1**t), v / (1 - B2**t)
    if epsilon_on_corrected:
      theta = theta - LR * m_hat / (np.sqrt(v_hat) + EPS)
    else:
      theta = theta - LR * np.sqrt(1 - B2**t) / (1 - B1**t) * m / (np.sqrt(v) + EPS)
  return theta


def run_keras(optimizer, theta, gradients):
  variable = keras.Variable(theta, dtype='float64')
  for g in gradients:
    optimizer.apply_gradients([(keras.ops.convert_to_tensor(g, 'float64'), variable)])
  return np.asarray(variable.numpy())


@pytest.fixture
def problem():
  rng = np.random.default_rng(0)
  theta = rng.normal(size=64)
  # Gradients spanning 1e-9 … 1: the small ones are where the two ε placements differ.
  scales = 10.0 ** rng.uniform(-9, 0, size=64)
  gradients = [scales * rng.normal(size=64) for _ in range(20)]
  return theta, gradients


@pytest.mark.parametrize('steps', [1, 2, 1000])
def test_torch_adam_equals_float64_pytorch_adam(steps):
  """On float64 variables every step equals PyTorch's Adam computed in float64 (its bias
  corrections from the Python-float βs) to 1e-12, at t = 1, 2 and 1000."""
  rng = np.random.default_rng(steps)
  theta = rng.normal(size=64)
  scales = 10.0 ** rng.uniform(-9, 0, size=64)
  gradients = [scales * rng.normal(size=64) for _ in range(steps)]
  got = run_keras(optimizers.make_optimizer('adam', LR, B1, B2, EPS), theta, gradients)
  want = numpy_adam(theta, gradients, epsilon_on_corrected=True)
  np.testing.assert_allclose(got - theta, want - theta, rtol=1e-12, atol=0)


def test_torch_adam_bias_correction_uses_the_float64_beta():
  """At t = 1 the step is lr·g/(|g| + ε) for β2 = 0.999 exactly; with β2 rounded to float32
  (0.99900001) it would be 0.9999936 of that, a relative error of 6.4e-6."""
  g = np.array([0.3, -2e-3, 5e-7])
  got = -run_keras(optimizers.make_optimizer('adam', LR, B1, B2, EPS), np.zeros(3), [g]) / LR32
  want = g / (np.abs(g) + EPS)
  np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
  # The corrections from the rounded βs, the moments from the exact ones (the defect).
  m, v = (1 - B1) * g, (1 - B2) * g * g
  rounded = m / (1 - B1_32) / (np.sqrt(v / (1 - B2_32)) + EPS)
  assert np.all(np.abs(rounded / want - 1) > 5e-6)


def test_keras_placement_is_keras_adam(problem):
  theta, gradients = problem
  optimizer = optimizers.make_optimizer('adam', LR, B1, B2, EPS, epsilon_placement='keras')
  assert type(optimizer) is keras.optimizers.Adam
  got = run_keras(optimizer, theta, gradients)
  want = numpy_adam(theta, gradients, epsilon_on_corrected=False, betas=(B1_32, B2_32))
  np.testing.assert_allclose(got - theta, want - theta, rtol=RTOL, atol=0)


def test_the_placements_differ_for_small_gradients():
  """A gradient of 1e-7 at step 1: PyTorch moves ≈ lr·g/(|g| + 1e-8) ≈ 0.91 lr; Keras's
  ε = 1e-7 on √v (effective 3.2e-6) moves ≈ lr·1e-7/3.26e-6 ≈ 0.03 lr."""
  g = [np.array([1e-7])]
  torch_step = -numpy_adam(np.zeros(1), g, True)[0] / LR
  keras_default = keras.optimizers.Adam(LR, B1, B2)  # ε = 1e-7
  keras_step = -run_keras(keras_default, np.zeros(1), g)[0] / LR
  assert torch_step == pytest.approx(1e-7 / (1e-7 + 1e-8), rel=1e-6)
  assert keras_step == pytest.approx(1e-7 / (1e-7 + 1e-7 / np.sqrt(1 - B2)), rel=1e-4)
  got = -run_keras(optimizers.make_optimizer('adam', LR, B1, B2), np.zeros(1), g)[0] / LR
  assert got == pytest.approx(torch_step, rel=RTOL)


RMS_LR = 5e-5
RMS_LR32 = float(np.float32(RMS_LR))


def numpy_rmsprop(theta, gradients, alpha=0.99, epsilon=1e-8, epsilon_under_root=False):
  """torch.optim.RMSprop's update (defaults: α 0.99, ε 1e-8 on √v), or Keras's (ε under the
  root), float64."""
  v = np.zeros_like(theta)
  for g in gradients:
    v = alpha * v + (1 - alpha) * g * g
    denominator = np.sqrt(v + epsilon) if epsilon_under_root else np.sqrt(v) + epsilon
    theta = theta - RMS_LR32 * g / denominator
  return theta


@pytest.mark.parametrize('steps', [1, 2, 1000])
def test_rmsprop_equals_float64_pytorch_rmsprop(steps):
  """On float64 variables every step equals PyTorch's RMSprop (its defaults) to 1e-12."""
  rng = np.random.default_rng(100 + steps)
  theta = rng.normal(size=64)
  scales = 10.0 ** rng.uniform(-9, 0, size=64)
  gradients = [scales * rng.normal(size=64) for _ in range(steps)]
  got = run_keras(optimizers.make_optimizer('rmsprop', RMS_LR), theta, gradients)
  want = numpy_rmsprop(theta, gradients)
  np.testing.assert_allclose(got - theta, want - theta, rtol=1e-12, atol=0)


def test_rmsprop_moves_small_gradients_as_pytorch_does():
  """A gradient of 1e-7 at step 1: PyTorch moves lr·g/(√0.01·|g| + 1e-8) ≈ 9.9 lr whatever
  the size of g; Keras's RMSprop (ρ 0.9, ε = 1e-7 under the root) moves
  lr·g/√(0.1 g² + 1e-7) ≈ 3.2e-4 lr. A clipped critic's gradients are this small."""
  g = [np.array([1e-7])]
  got = -run_keras(optimizers.make_optimizer('rmsprop', RMS_LR), np.zeros(1), g)[0] / RMS_LR32
  assert got == pytest.approx(1e-7 / (0.1 * 1e-7 + 1e-8), rel=1e-12)
  keras_step = -run_keras(keras.optimizers.RMSprop(RMS_LR), np.zeros(1), g)[0] / RMS_LR32
  want_keras = -numpy_rmsprop(np.zeros(1), g, alpha=0.9, epsilon=1e-7,
                              epsilon_under_root=True)[0] / RMS_LR32
  assert keras_step == pytest.approx(want_keras, rel=1e-6)
  assert keras_step < 1e-3 * got


def test_bad_choices_are_config_errors():
  with pytest.raises(errors.ConfigError, match='adam_epsilon_placement'):
    optimizers.make_optimizer('adam', LR, epsilon_placement='torch')
  with pytest.raises(errors.ConfigError, match='unknown optimizer'):
    optimizers.make_optimizer('sgd', LR)
