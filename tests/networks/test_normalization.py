"""Critic normalizations (algorithm.md#critic-normalization) against NumPy implementations written from the formula."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.networks import normalization

pytestmark = pytest.mark.numerics

EPS = 1e-5
# Non-square spatial size so that an H/W mix-up shows.
SHAPE = (3, 5, 6, 4)
LAYER_NORMS = {
    'layer_norm_singleton_per_channel': ('singleton', 'per_channel'),
    'layer_norm_singleton_per_pixel': ('singleton', 'per_pixel'),
    'layer_norm_per_channel_per_channel': ('per_channel', 'per_channel'),
    'layer_norm_per_channel_per_pixel': ('per_channel', 'per_pixel'),
}


def numpy_layer_norm(a, stats, params, g, b):
  """y = g (a − μ) / sqrt(σ² + ε) + b, σ² biased, per example, NHWC."""
  a = a.astype(np.float64)
  axes = (1, 2, 3) if stats == 'singleton' else (1, 2)
  mu = a.mean(axis=axes, keepdims=True)
  var = ((a - mu) ** 2).mean(axis=axes, keepdims=True)
  if params == 'per_pixel':  # g, b are [H, W]: broadcast over C.
    g, b = g[:, :, None], b[:, :, None]
  return g * (a - mu) / np.sqrt(var + EPS) + b


def random_input(seed=0):
  rng = np.random.default_rng(seed)
  # Offset and scale per channel so that per-channel and singleton statistics differ.
  return (rng.normal(size=SHAPE) * rng.uniform(0.5, 3.0, size=SHAPE[-1])
          + rng.normal(size=SHAPE[-1]) * 2.0).astype(np.float32)


def randomize(variable, rng, loc):
  variable.assign(loc + rng.normal(size=variable.shape).astype(np.float32))


@pytest.mark.parametrize('name', sorted(LAYER_NORMS))
def test_layer_norm_matches_numpy(name):
  stats, params = LAYER_NORMS[name]
  layer = normalization.make_normalization(name)
  x = random_input()
  layer.build(x.shape)
  rng = np.random.default_rng(1)
  randomize(layer.gamma, rng, 1.0)
  randomize(layer.beta, rng, 0.0)
  expected_shape = (SHAPE[-1],) if params == 'per_channel' else SHAPE[1:3]
  assert tuple(layer.gamma.shape) == expected_shape
  assert tuple(layer.beta.shape) == expected_shape
  expected = numpy_layer_norm(x, stats, params, layer.gamma.numpy(), layer.beta.numpy())
  np.testing.assert_allclose(layer(x).numpy(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('name', sorted(LAYER_NORMS))
def test_layer_norm_starts_at_unit_scale_zero_shift(name):
  stats, params = LAYER_NORMS[name]
  layer = normalization.make_normalization(name)
  x = random_input(2)
  y = layer(x).numpy()
  np.testing.assert_array_equal(layer.gamma.numpy(), 1.0)
  np.testing.assert_array_equal(layer.beta.numpy(), 0.0)
  ones = np.ones(layer.gamma.shape)
  np.testing.assert_allclose(y, numpy_layer_norm(x, stats, params, ones, 0 * ones), atol=1e-5)


def test_layer_norm_epsilon_is_inside_the_square_root():
  # A constant input has σ² = 0: y = g·0/sqrt(0 + ε) + b = b exactly, never NaN.
  layer = normalization.ConfigurableLayerNorm()
  x = np.full(SHAPE, 3.0, np.float32)
  layer.build(x.shape)
  layer.beta.assign([0.5, -1.0, 2.0, 0.0])
  np.testing.assert_allclose(layer(x).numpy(), np.broadcast_to(layer.beta.numpy(), SHAPE))
  # σ² = 1e-5 = ε: a standardized value 1 comes out as 1 / sqrt(2).
  x = np.zeros((1, 1, 2, 1), np.float32)
  x[0, 0, :, 0] = [-np.sqrt(EPS), np.sqrt(EPS)]
  y = normalization.ConfigurableLayerNorm()(x).numpy()
  np.testing.assert_allclose(y[0, 0, :, 0], [-1 / np.sqrt(2), 1 / np.sqrt(2)], rtol=1e-4)


def test_layer_norm_alias_is_singleton_per_channel():
  layer = normalization.make_normalization('layer_norm')
  assert (layer.stats, layer.params, layer.epsilon) == ('singleton', 'per_channel', EPS)


def test_layer_norm_is_per_example():
  layer = normalization.make_normalization('layer_norm_singleton_per_channel')
  x = random_input(3)
  whole = layer(x).numpy()
  np.testing.assert_allclose(layer(x[1:2]).numpy(), whole[1:2], atol=1e-6)


def test_layer_norm_computes_in_float32_under_mixed_precision():
  x = random_input(4)
  try:
    keras.mixed_precision.set_global_policy('mixed_bfloat16')
    layer = normalization.make_normalization('layer_norm_per_channel_per_pixel')
    y = layer(tf.constant(x, tf.bfloat16))
  finally:
    keras.mixed_precision.set_global_policy('float32')
  assert y.dtype == tf.bfloat16
  assert layer.gamma.dtype == 'float32'
  x_bf16 = tf.cast(tf.cast(x, tf.bfloat16), tf.float32).numpy()
  g = np.ones(SHAPE[1:3])
  expected = numpy_layer_norm(x_bf16, 'per_channel', 'per_pixel', g, 0 * g)
  # Only the final cast to bfloat16 rounds: relative error ≤ 2^-8.
  np.testing.assert_allclose(tf.cast(y, tf.float32).numpy(), expected, rtol=2**-8, atol=1e-6)


def test_batch_norm_settings():
  layer = normalization.make_normalization('batch_norm')
  assert isinstance(layer, keras.layers.BatchNormalization)
  assert layer.epsilon == EPS
  assert layer.momentum == pytest.approx(0.9)  # PyTorch momentum 0.1.


def test_batch_norm_init_is_normal_one_two_percent():
  layer = normalization.make_batch_norm(seed=5)
  n = 20000
  layer.build((None, 2, 2, n))
  gamma = layer.gamma.numpy()
  # Standard errors: 0.02/sqrt(n) for the mean, 0.02/sqrt(2n) for the std; allow 5.
  assert abs(gamma.mean() - 1.0) < 5 * 0.02 / np.sqrt(n)
  assert abs(gamma.std() - 0.02) < 5 * 0.02 / np.sqrt(2 * n)
  np.testing.assert_array_equal(layer.beta.numpy(), 0.0)
  np.testing.assert_array_equal(layer.moving_mean.numpy(), 0.0)
  np.testing.assert_array_equal(layer.moving_variance.numpy(), 1.0)


def _random_batch_norm(input_seed, rng_seed):
  """A built batch-norm layer with random γ and β, a random input and the generator used."""
  layer = normalization.make_normalization('batch_norm')
  x = random_input(input_seed)
  layer.build(x.shape)
  rng = np.random.default_rng(rng_seed)
  randomize(layer.gamma, rng, 1.0)
  randomize(layer.beta, rng, 0.0)
  return layer, x, rng


def test_batch_norm_training_uses_batch_statistics_and_updates_moving_ones():
  layer, x, rng = _random_batch_norm(input_seed=5, rng_seed=6)
  y = layer(x, training=True).numpy()
  a = x.astype(np.float64)
  mu = a.mean(axis=(0, 1, 2))
  var = a.var(axis=(0, 1, 2))  # Biased, as PyTorch's normalization in training.
  g, b = layer.gamma.numpy(), layer.beta.numpy()
  np.testing.assert_allclose(y, g * (a - mu) / np.sqrt(var + EPS) + b, atol=1e-5, rtol=1e-5)
  # m ← 0.9 m + 0.1 s from m = 0 and v = 1 (Keras updates with the biased variance).
  np.testing.assert_allclose(layer.moving_mean.numpy(), 0.1 * mu, atol=1e-6)
  np.testing.assert_allclose(layer.moving_variance.numpy(), 0.9 + 0.1 * var, atol=1e-6)


def test_batch_norm_inference_uses_moving_statistics():
  layer, x, rng = _random_batch_norm(input_seed=7, rng_seed=8)
  randomize(layer.moving_mean, rng, 0.0)
  layer.moving_variance.assign(rng.uniform(0.5, 2.0, size=SHAPE[-1]).astype(np.float32))
  y = layer(x, training=False).numpy()
  g, b = layer.gamma.numpy(), layer.beta.numpy()
  m, v = layer.moving_mean.numpy(), layer.moving_variance.numpy()
  np.testing.assert_allclose(y, g * (x.astype(np.float64) - m) / np.sqrt(v + EPS) + b,
                             atol=1e-5, rtol=1e-5)


def test_none_is_identity():
  layer = normalization.make_normalization('none')
  x = random_input(9)
  np.testing.assert_array_equal(layer(x).numpy(), x)
  assert not layer.weights


def test_every_name_builds():
  x = random_input(10)
  for name in normalization.NORMALIZATIONS:
    assert normalization.make_normalization(name)(x).shape == x.shape


def test_unknown_name_lists_the_valid_ones():
  with pytest.raises(errors.ConfigError) as raised:
    normalization.make_normalization('group_norm')
  for name in normalization.NORMALIZATIONS:
    assert name in str(raised.value)


def test_unknown_layer_norm_choices_are_config_errors():
  with pytest.raises(errors.ConfigError):
    normalization.ConfigurableLayerNorm(stats='per_batch')
  with pytest.raises(errors.ConfigError):
    normalization.ConfigurableLayerNorm(params='per_example')


def test_batch_norm_second_derivative_matches_finite_differences():
  """∂/∂w ‖∇_x BN(x·w)‖² — what Sobolev/GP need — against central differences (float64)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(11)
  x = tf.constant(rng.normal(size=(6, 2, 2, 3)), tf.float64)
  # The critic's class, in float64 so that the finite differences are exact enough.
  layer = normalization.BatchNormalization(epsilon=normalization.BATCH_NORM_EPSILON,
                                           dtype='float64')
  layer.build(x.shape)
  layer.gamma.assign(rng.normal(1.0, 0.3, size=3))
  layer.beta.assign(rng.normal(0.0, 0.3, size=3))
  w = tf.Variable(rng.normal(size=(3,)), dtype=tf.float64)
  probe = tf.constant(rng.normal(size=(6, 2, 2, 3)), tf.float64)

  def penalty():
    with tf.GradientTape() as inner:
      inner.watch(x)
      y = tf.reduce_sum(layer(x * w, training=True) * probe)
    return tf.reduce_sum(tf.square(inner.gradient(y, x)))

  with tf.GradientTape() as tape:
    value = penalty()
  analytic = tape.gradient(value, w).numpy()
  numeric = np.zeros(3)
  h = 1e-5
  for i in range(3):
    for sign in (1, -1):
      w.assign_add(tf.one_hot(i, 3, dtype=tf.float64) * sign * h)
      numeric[i] += sign * float(penalty()) / (2 * h)
      w.assign_sub(tf.one_hot(i, 3, dtype=tf.float64) * sign * h)
  np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_batch_norm_second_derivative_ignores_a_shift_before_it():
  """BN(a + b) = BN(a) for a per-channel shift b, so ∂/∂b ‖∇_x BN(x + b)‖² is exactly 0.

  tf.nn.moments (Keras's BN) centres the variance on stop_gradient(mean), which gives a
  non-zero second derivative here; the critic's BatchNormalization must give 0.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(12)
  x = tf.constant(rng.normal(size=(6, 2, 2, 3)), tf.float64)
  layer = normalization.BatchNormalization(epsilon=normalization.BATCH_NORM_EPSILON,
                                           dtype='float64')
  layer.build(x.shape)
  layer.gamma.assign(rng.normal(1.0, 0.3, size=3))
  shift = tf.Variable(rng.normal(size=(3,)), dtype=tf.float64)
  probe = tf.constant(rng.normal(size=(6, 2, 2, 3)), tf.float64)
  with tf.GradientTape() as tape:
    with tf.GradientTape() as inner:
      inner.watch(x)
      y = tf.reduce_sum(layer(x * x + shift, training=True) * probe)
    value = tf.reduce_sum(tf.square(inner.gradient(y, x)))
  np.testing.assert_allclose(tape.gradient(value, shift).numpy(), 0.0, atol=1e-10)


@pytest.mark.parametrize('name', sorted(LAYER_NORMS))
def test_layer_norm_second_derivative_ignores_a_shift_before_it(name):
  """LN(a + c) = LN(a) for c constant over the statistics' axes, so ∂/∂c ‖∇_x LN(x + c)‖²
  is 0: the double backward (Sobolev / gradient penalty through an LN critic) must see the
  mean inside the variance. With stop_gradient(μ) in σ² (as tf.nn.moments) it is O(1).
  """
  stats, _ = LAYER_NORMS[name]
  rng = np.random.default_rng(21)
  layer = normalization.make_normalization(name)
  x = tf.constant(random_input(3))
  layer.build(x.shape)
  randomize(layer.gamma, rng, 1.0)
  randomize(layer.beta, rng, 0.0)
  shift_shape = (SHAPE[0], 1, 1, 1 if stats == 'singleton' else SHAPE[-1])
  shift = tf.Variable(rng.normal(size=shift_shape).astype(np.float32))
  probe = tf.constant(rng.normal(size=SHAPE).astype(np.float32))

  def gradient_of_squared_input_gradient(norm):
    with tf.GradientTape() as tape:
      with tf.GradientTape() as inner:
        inner.watch(x)
        y = tf.reduce_sum(norm(x * tf.abs(x) + shift) * probe)
      value = tf.reduce_sum(tf.square(inner.gradient(y, x)))
    return tape.gradient(value, shift).numpy(), value.numpy()

  ours, value = gradient_of_squared_input_gradient(layer)
  np.testing.assert_allclose(ours, 0.0, atol=1e-7 * value)  # Measured ≈ 5e-10 · value.

  def stopped_mean_norm(a):  # The tf.nn.moments way: detectably wrong here.
    axes = (1, 2, 3) if stats == 'singleton' else (1, 2)
    mean = tf.reduce_mean(a, axis=axes, keepdims=True)
    variance = tf.reduce_mean(tf.square(a - tf.stop_gradient(mean)), axis=axes, keepdims=True)
    return (a - mean) * tf.math.rsqrt(variance + EPS)

  wrong, wrong_value = gradient_of_squared_input_gradient(stopped_mean_norm)
  assert np.max(np.abs(wrong)) > 1e-5 * wrong_value  # Measured 7e-5 to 8e-4 · value.
