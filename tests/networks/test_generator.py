"""The algorithm.md#networks generator: parameter count by hand, no biases, range, init, forward vs NumPy."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.training import precision


def hand_count(channels, ngf=64, noise=100):
  """Trainable parameters: ConvT/Conv kernels (no biases) + BN γ and β."""
  convt1 = 4 * 4 * noise * (4 * ngf)         # 1x1 → 4x4
  convt2 = 4 * 4 * (4 * ngf) * (2 * ngf)     # 4x4 → 8x8
  convt3 = 4 * 4 * (2 * ngf) * ngf           # 8x8 → 16x16
  conv4 = 3 * 3 * ngf * ngf
  conv5 = 3 * 3 * ngf * ngf
  convt6 = 4 * 4 * ngf * channels            # 16x16 → 32x32
  batch_norms = 2 * (4 * ngf + 2 * ngf + ngf + ngf + ngf)
  return convt1 + convt2 + convt3 + conv4 + conv5 + convt6 + batch_norms


@pytest.fixture(scope='module')
def generators():
  return {c: generator_lib.build_generator(generator_lib.BuildGenerator(), c, seed=0)
          for c in (1, 3)}


def count(variables):
  return sum(int(np.prod(v.shape)) for v in variables)


def test_hand_counts():
  assert hand_count(3) == 1142912
  assert hand_count(1) == 1140864


@pytest.mark.parametrize('channels', [1, 3])
def test_parameter_count(generators, channels):
  assert count(generators[channels].trainable_variables) == hand_count(channels)


@pytest.mark.parametrize('channels', [1, 3])
def test_output_shape_and_range(generators, channels):
  z = np.random.default_rng(channels).normal(size=(8, 100)).astype(np.float32)
  for training in (False, True):
    x = generators[channels](z, training=training).numpy()
    assert x.shape == (8, 32, 32, channels)
    assert x.dtype == np.float32
    assert x.min() >= -1.0 and x.max() <= 1.0


def test_output_saturates_at_plus_and_minus_one():
  # A huge last kernel drives tanh to its limits: the range is [-1, 1], not a sub-range.
  generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=8), 3, seed=1)
  last = generator.body.get_layer('convt6').kernel
  last.assign(last * 1e4)
  z = np.random.default_rng(2).normal(size=(4, 100)).astype(np.float32)
  x = generator(z, training=True).numpy()
  assert x.min() == -1.0 and x.max() == 1.0


def test_intermediate_sizes(generators):
  shapes = {layer.name: tuple(layer.output.shape[1:]) for layer in generators[3].body.layers
            if layer.name.startswith(('convt', 'conv'))}
  assert shapes == {'convt1': (4, 4, 256), 'convt2': (8, 8, 128), 'convt3': (16, 16, 64),
                    'conv4': (16, 16, 64), 'conv5': (16, 16, 64), 'convt6': (32, 32, 3)}


def test_no_biases(generators):
  generator = generators[3]
  convs = [layer for layer in generator.body.layers
           if isinstance(layer, (keras.layers.Conv2D, keras.layers.Conv2DTranspose))]
  assert len(convs) == 6
  assert all(layer.bias is None for layer in convs)
  names = sorted({v.path.rsplit('/', 1)[-1] for v in generator.trainable_variables})
  assert names == ['beta', 'gamma', 'kernel']


def test_init_statistics(generators):
  generator = generators[3]
  for v in generator.trainable_variables:
    w = v.numpy().ravel()
    n = w.size
    if v.path.endswith('kernel'):
      loc = 0.0
    elif v.path.endswith('gamma'):
      loc = 1.0
    else:
      np.testing.assert_array_equal(w, 0.0)
      continue
    # 5 standard errors of the sample mean and std (n ≥ 64).
    assert abs(w.mean() - loc) < 5 * 0.02 / np.sqrt(n), v.path
    assert abs(w.std() - 0.02) < 5 * 0.02 / np.sqrt(2 * n), v.path
  bn = generator.body.get_layer('bn1')
  assert bn.epsilon == 1e-5 and bn.momentum == pytest.approx(0.9)


def conv_transpose(x, kernel, stride, pad):
  """PyTorch ConvTranspose2d in NumPy: Keras kernel [k, k, out, in]; each input pixel
  scatters kernel·x into the output, then `pad` rows/cols are cropped from each side (4x4 s2
  'same' = PyTorch padding 1)."""
  batch, height, width, _ = x.shape
  k = kernel.shape[0]
  full = np.zeros((batch, (height - 1) * stride + k, (width - 1) * stride + k,
                   kernel.shape[2]))
  for i in range(height):
    for j in range(width):
      full[:, i * stride:i * stride + k, j * stride:j * stride + k, :] += np.einsum(
          'bc,hwoc->bhwo', x[:, i, j, :], kernel)
  return full[:, pad:full.shape[1] - pad, pad:full.shape[2] - pad, :]


def conv3x3(x, kernel):
  x = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
  h, w = x.shape[1] - 2, x.shape[2] - 2
  return sum(x[:, i:i + h, j:j + w, :] @ kernel[i, j] for i in range(3) for j in range(3))


def numpy_generator(generator, z, training=False, upsamplings=0):
  """tanh of ConvT / BN / ReLU written out in NumPy, reading the weights by layer name; BN
  with its moving statistics, or (training) the batch's mean and biased variance per channel
  over (N, H, W); `upsamplings` blocks ConvT 4x4 s2 'same' → BN, ReLU before the last ConvT
  (docs/algorithm.md#image-sizes)."""
  def kernel(name):
    return generator.body.get_layer(name).kernel.numpy().astype(np.float64)

  def bn_relu(x, name):
    gamma, beta, mean, var = [w.numpy().astype(np.float64)
                              for w in generator.body.get_layer(name).weights]
    if training:
      mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    return np.maximum(gamma * (x - mean) / np.sqrt(var + 1e-5) + beta, 0.0)

  h = conv_transpose(z[:, None, None, :].astype(np.float64), kernel('convt1'), 1, 0)
  h = bn_relu(h, 'bn1')
  h = bn_relu(conv_transpose(h, kernel('convt2'), 2, 1), 'bn2')
  h = bn_relu(conv_transpose(h, kernel('convt3'), 2, 1), 'bn3')
  h = bn_relu(conv3x3(h, kernel('conv4')), 'bn4')
  h = bn_relu(conv3x3(h, kernel('conv5')), 'bn5')
  for index in range(1, upsamplings + 1):
    h = bn_relu(conv_transpose(h, kernel(f'up{index}'), 2, 1), f'up_bn{index}')
  return np.tanh(conv_transpose(h, kernel('convt6'), 2, 1))


def randomize(generator, seed):
  """BN parameters and statistics away from their init, kernels larger: every layer's wiring
  shows in the output."""
  rng = np.random.default_rng(seed)
  for v in generator.body.variables:
    if v.path.endswith(('gamma', 'moving_variance')):
      v.assign(rng.uniform(0.5, 1.5, size=v.shape).astype(np.float32))
    elif v.path.endswith(('beta', 'moving_mean')):
      v.assign(0.1 * rng.normal(size=v.shape).astype(np.float32))
    elif v.path.endswith('kernel'):
      v.assign(0.15 * rng.normal(size=v.shape).astype(np.float32))
  return rng


@pytest.mark.numerics
def test_forward_matches_numpy_in_inference():
  generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=4), 2, seed=3)
  rng = randomize(generator, 4)
  z = rng.normal(size=(2, 100))
  expected = numpy_generator(generator, z)
  got = generator(z.astype(np.float32), training=False).numpy()
  assert got.shape == expected.shape == (2, 32, 32, 2)
  # Spread over the range but not saturated, so the comparison means something.
  assert 0.5 < np.abs(expected).max() < 0.999
  np.testing.assert_allclose(got, expected, atol=1e-6, rtol=1e-4)


@pytest.mark.numerics
def test_training_mode_uses_batch_statistics():
  """The output with each BN on its batch's statistics, against NumPy; and the moving mean
  after one update, 0.1 × the batch mean of convt1's output (momentum 0.9)."""
  generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=4), 1, seed=5)
  rng = randomize(generator, 7)
  z = rng.normal(size=(16, 100))
  before = generator.body.get_layer('bn1').moving_mean.numpy().astype(np.float64)
  expected = numpy_generator(generator, z, training=True)
  got = generator(z.astype(np.float32), training=True).numpy()
  assert 0.5 < np.abs(expected).max() < 0.999
  np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4)
  # Inference with the old moving statistics would differ by far more than that.
  assert np.abs(numpy_generator(generator, z) - expected).max() > 1e-2
  after = generator.body.get_layer('bn1').moving_mean.numpy()
  h = conv_transpose(z[:, None, None, :],
                     generator.body.get_layer('convt1').kernel.numpy().astype(np.float64), 1, 0)
  np.testing.assert_allclose(after, 0.9 * before + 0.1 * h.mean(axis=(0, 1, 2)), atol=1e-6)


def test_seed_reproducible():
  a = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=8), 3, seed=9)
  b = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=8), 3, seed=9)
  for va, vb in zip(a.variables, b.variables):
    np.testing.assert_array_equal(va.numpy(), vb.numpy())


def test_mixed_bfloat16_output_is_float32_and_the_float32_generators():
  """Computed in bfloat16, returned in float32, and within bfloat16's precision (measured 1%
  of the images' norm) of the float32 generator of the same seed."""
  if precision.bfloat16_convolutions_fail():
    pytest.skip(f'no bfloat16 convolution here: {precision.bfloat16_convolutions_fail()}')
  z = tf.constant(np.random.default_rng(3).normal(size=(4, 100)), tf.float32)
  try:
    keras.mixed_precision.set_global_policy('mixed_bfloat16')
    generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=8), 3, seed=0)
    x = generator(z, training=True)
  finally:
    keras.mixed_precision.set_global_policy('float32')
  assert x.dtype == tf.float32
  assert float(tf.reduce_max(tf.abs(x))) <= 1.0
  exact = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=8), 3, seed=0)(
      z, training=True).numpy()
  assert np.linalg.norm(x.numpy() - exact) < 5e-2 * np.linalg.norm(exact)


def test_independent_of_a_critic_built_from_the_same_seed():
  # Initializers seeded alike draw the same N(0, 1) sequence; compare the standardized first
  # draws of every random tensor of both networks.
  def first_draws(model):
    draws = set()
    for v in model.trainable_variables:
      if v.path.endswith(('kernel', 'gamma')):
        loc = 1.0 if v.path.endswith('gamma') else 0.0
        draws.add(round(float((v.numpy().ravel()[0] - loc) / 0.02), 3))
    return draws

  generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=8), 3, seed=9)
  critic = critic_lib.build_critic(critic_lib.BuildCritic(normalization='batch_norm', width=0.125),
                                   10, 3, seed=9)
  assert len(first_draws(generator)) == 6 + 5
  assert not first_draws(generator) & first_draws(critic)
