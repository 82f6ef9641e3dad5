"""The algorithm.md#networks critic: parameter counts by hand, init, forward pass against NumPy, dropout."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import normalization
from tf_ipmssl.training import precision

K = 10
C = 3
SMALL = 0.125  # 12 / 24 / 48 filters: fast forward passes.


@pytest.fixture(scope='module')
def full_critics():
  """Width-1 critics, built once (no forward passes)."""
  return {name: critic_lib.build_critic(critic_lib.BuildCritic(normalization=name), K, C, seed=0)
          for name in normalization.NORMALIZATIONS}


def hand_count(norm_params):
  """Trainable parameters of the docs/algorithm.md#critic table at width 1, K = 10, C = 3."""
  conv1 = 3 * 3 * 3 * 96 + 96          # kernel + bias (the only conv bias)
  conv2 = 3 * 3 * 96 * 96
  conv3 = 3 * 3 * 96 * 96
  conv4 = 3 * 3 * 96 * 192
  conv5 = 3 * 3 * 192 * 192
  conv6 = 3 * 3 * 192 * 192
  conv7 = 3 * 3 * 192 * 384
  conv8 = 3 * 3 * 384 * 384
  conv9 = 1 * 1 * 384 * 384
  v = 6144 * 1                          # no bias
  s = 6144 * 10 + 10
  return conv1 + conv2 + conv3 + conv4 + conv5 + conv6 + conv7 + conv8 + conv9 + v + s + norm_params


# g and b for the eight normalized layers (convs 2-9):
PER_CHANNEL_NORM = 2 * (96 + 96 + 192 + 192 + 192 + 384 + 384 + 384)             # = 3840
# per-pixel g, b ∈ R^{H×W} at the output size of each conv: 32, 16, 16, 16, 8, 6, 4, 4.
PER_PIXEL_NORM = 2 * (32 * 32 + 16 * 16 + 16 * 16 + 16 * 16 + 8 * 8 + 6 * 6 + 4 * 4 + 4 * 4)  # 3848
EXPECTED_COUNTS = {
    'none': hand_count(0),                                        # 3,203,722
    'batch_norm': hand_count(PER_CHANNEL_NORM),                   # moving stats not trainable
    'layer_norm': hand_count(PER_CHANNEL_NORM),
    'layer_norm_singleton_per_channel': hand_count(PER_CHANNEL_NORM),
    'layer_norm_singleton_per_pixel': hand_count(PER_PIXEL_NORM),
    'layer_norm_per_channel_per_channel': hand_count(PER_CHANNEL_NORM),
    'layer_norm_per_channel_per_pixel': hand_count(PER_PIXEL_NORM),
}


def count(variables):
  return sum(int(np.prod(v.shape)) for v in variables)


def test_hand_counts():
  assert PER_CHANNEL_NORM == 3840 and PER_PIXEL_NORM == 3848
  assert EXPECTED_COUNTS['none'] == 3203722


@pytest.mark.parametrize('name', normalization.NORMALIZATIONS)
def test_trainable_parameter_count_at_width_one(full_critics, name):
  critic = full_critics[name]
  assert count(critic.trainable_variables) == EXPECTED_COUNTS[name]
  assert critic.feature_dim == 6144
  assert critic.normalization == name
  assert critic.has_batch_norm == (name == 'batch_norm')


def test_batch_norm_moving_statistics_are_not_trainable(full_critics):
  critic = full_critics['batch_norm']
  moving = [v for v in critic.non_trainable_variables if 'moving' in v.path]
  assert count(moving) == PER_CHANNEL_NORM


def test_full_size_forward_shapes_and_numbers(full_critics):
  """The full-width critic (96-192-384 filters) computes what the NumPy critic computes
  (numpy_critic, below), as the narrow ones of test_forward_matches_numpy do."""
  critic = full_critics['none']
  x = np.random.default_rng(6).uniform(-1, 1, size=(2, 32, 32, C)).astype(np.float32)
  fake, classes = critic(x)
  assert fake.shape == (2,) and classes.shape == (2, K)
  assert critic.features(x).shape == (2, 6144)
  phi, expected_fake, expected_classes = numpy_critic(critic, x, lambda h: h)
  scale = np.abs(phi).max()
  np.testing.assert_allclose(critic.features(x).numpy(), phi, atol=1e-5 * scale, rtol=1e-4)
  np.testing.assert_allclose(fake.numpy(), expected_fake, atol=1e-5 * scale, rtol=1e-4)
  np.testing.assert_allclose(classes.numpy(), expected_classes, atol=1e-5 * scale, rtol=1e-4)


def test_init_statistics(full_critics):
  critic = full_critics['none']
  kernels = [v.numpy().ravel() for v in critic.trainable_variables if 'kernel' in v.path]
  assert len(kernels) == 9 + 2
  for w in kernels:
    n = w.size
    # Standard errors 0.02/sqrt(n) and 0.02/sqrt(2n); 5 of them (n ≥ 2592).
    assert abs(w.mean()) < 5 * 0.02 / np.sqrt(n)
    assert abs(w.std() - 0.02) < 5 * 0.02 / np.sqrt(2 * n)
  biases = {v.path: v.numpy() for v in critic.trainable_variables if 'bias' in v.path}
  assert sorted(biases) == ['body/conv1/bias', 's/bias']
  # PyTorch's default bias init, U(±1/√fan_in): fan_in 3·3·C for conv 1, 6144 for S.
  for path, fan_in in (('body/conv1/bias', 3 * 3 * C), ('s/bias', 6144)):
    b, bound = biases[path], 1 / np.sqrt(fan_in)
    assert np.all(np.abs(b) <= bound) and np.abs(b).max() > 0.5 * bound
  # 96 draws: the sample std of U(±a) is a/√3 within 5 standard errors (≈ a/√(3·2·96)·…).
  b = biases['body/conv1/bias']
  bound = 1 / np.sqrt(27)
  assert abs(b.std() - bound / np.sqrt(3)) < 5 * bound * np.sqrt(1 / 45 / 96)
  assert abs(b.mean()) < 5 * bound / np.sqrt(3 * 96)


def test_zero_bias_init():
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL, bias_init='zeros'), K, C,
                                   seed=0)
  for v in critic.trainable_variables:
    if 'bias' in v.path:
      np.testing.assert_array_equal(v.numpy(), 0.0)


def test_bias_init_keeps_the_other_draws():
  """The bias seeds have their own stream: kernels are those of the zero-bias critic."""
  a = critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL), K, C, seed=3)
  b = critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL, bias_init='zeros'), K, C, seed=3)
  for va, vb in zip(a.weights, b.weights):
    if 'bias' not in va.path:
      np.testing.assert_array_equal(np.asarray(va.numpy()), np.asarray(vb.numpy()))


def test_unknown_bias_init_is_a_config_error():
  with pytest.raises(errors.ConfigError, match='bias_init'):
    critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL, bias_init='ones'), K, C)


def test_batch_norm_gamma_init(full_critics):
  gammas = np.concatenate([v.numpy() for v in full_critics['batch_norm'].trainable_variables
                           if v.path.endswith('gamma')])
  assert gammas.size == PER_CHANNEL_NORM // 2
  n = gammas.size
  assert abs(gammas.mean() - 1.0) < 5 * 0.02 / np.sqrt(n)
  assert abs(gammas.std() - 0.02) < 5 * 0.02 / np.sqrt(2 * n)


def test_layer_norm_init_is_one_and_zero(full_critics):
  critic = full_critics['layer_norm_singleton_per_pixel']
  for v in critic.trainable_variables:
    if v.path.endswith('gamma'):
      np.testing.assert_array_equal(v.numpy(), 1.0)
    if v.path.endswith('beta'):
      np.testing.assert_array_equal(v.numpy(), 0.0)


@pytest.mark.parametrize('name', ['none', 'batch_norm', 'layer_norm_per_channel_per_pixel'])
def test_weight_decay_groups_partition_trainable_variables(full_critics, name):
  critic = full_critics[name]
  v_ids = [id(v) for v in critic.v_variables]
  rest_ids = [id(v) for v in critic.phi_and_s_variables]
  assert v_ids == [id(critic.v_head.kernel)]
  assert not set(v_ids) & set(rest_ids)
  assert sorted(v_ids + rest_ids) == sorted(id(v) for v in critic.trainable_variables)
  assert count(critic.v_variables) == 6144


# ---------------------------------------------------------------------------------------------
# Forward pass against NumPy (width 1/8, inference mode).


def numpy_conv(x, kernel, stride, padding, bias=None):
  """NHWC conv with TF's padding: 'same' pads to ceil(size / stride), the odd pixel after."""
  batch, height, width, _ = x.shape
  k = kernel.shape[0]
  if padding == 'same':
    out_h, out_w = -(-height // stride), -(-width // stride)
    pad_h = max((out_h - 1) * stride + k - height, 0)
    pad_w = max((out_w - 1) * stride + k - width, 0)
    x = np.pad(x, ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2),
                   (0, 0)))
  else:
    out_h, out_w = (height - k) // stride + 1, (width - k) // stride + 1
  out = np.zeros((batch, out_h, out_w, kernel.shape[-1]))
  for i in range(k):
    for j in range(k):
      patch = x[:, i:i + stride * out_h:stride, j:j + stride * out_w:stride, :]
      out += patch @ kernel[i, j]
  return out if bias is None else out + bias


def leaky_relu(x):
  return np.where(x > 0, x, 0.2 * x)


def numpy_critic(critic, x, norm, reduction_strides=()):
  """Φ, v·Φ and S(Φ) from the algorithm.md#critic table, reading the critic's weights by layer
  name; after conv 1 a reduction block Conv 3x3 stride s 'same', Norm, LReLU per stride
  (algorithm.md#image-sizes)."""
  def weights(name):
    return [w.numpy().astype(np.float64) for w in critic.body.get_layer(name).weights]

  kernel, bias = weights('conv1')
  h = leaky_relu(numpy_conv(x.astype(np.float64), kernel, 1, 'same', bias))
  for index, stride in enumerate(reduction_strides, start=1):
    (kernel,) = weights(f'reduce{index}')
    h = leaky_relu(norm(numpy_conv(h, kernel, stride, 'same'), *weights(f'reduce_norm{index}')))
  table = [(2, 1, 'same'), (3, 2, 'same'), (4, 1, 'same'), (5, 1, 'same'), (6, 2, 'same'),
           (7, 1, 'valid'), (8, 1, 'valid'), (9, 1, 'valid')]
  for index, stride, padding in table:
    (kernel,) = weights(f'conv{index}')
    h = numpy_conv(h, kernel, stride, padding)
    h = norm(h, *weights(f'norm{index}'))
    h = leaky_relu(h)
  phi = h.reshape(h.shape[0], -1)
  v = critic.v_head.kernel.numpy().astype(np.float64)
  s_kernel, s_bias = [w.numpy().astype(np.float64) for w in critic.s_head.weights]
  return phi, (phi @ v)[:, 0], phi @ s_kernel + s_bias


def randomize_norm_parameters(critic, seed):
  rng = np.random.default_rng(seed)
  for v in critic.body.trainable_variables:
    if v.path.endswith('gamma'):
      v.assign(1.0 + 0.5 * rng.normal(size=v.shape).astype(np.float32))
    elif v.path.endswith('beta'):
      v.assign(0.5 * rng.normal(size=v.shape).astype(np.float32))


def per_pixel_singleton_layer_norm(h, g, b):
  mu = h.mean(axis=(1, 2, 3), keepdims=True)
  var = h.var(axis=(1, 2, 3), keepdims=True)
  return g[:, :, None] * (h - mu) / np.sqrt(var + 1e-5) + b[:, :, None]


def inference_batch_norm(h, gamma, beta, mean, variance):
  return gamma * (h - mean) / np.sqrt(variance + 1e-5) + beta


@pytest.mark.numerics
@pytest.mark.parametrize('name,norm', [
    ('none', lambda h: h),
    ('layer_norm_singleton_per_pixel', per_pixel_singleton_layer_norm),
    ('batch_norm', inference_batch_norm),
])
def test_forward_matches_numpy(name, norm):
  critic = critic_lib.build_critic(critic_lib.BuildCritic(normalization=name, width=SMALL), K, C,
                                   seed=1)
  randomize_norm_parameters(critic, 2)
  if name == 'batch_norm':
    rng = np.random.default_rng(3)
    for v in critic.body.non_trainable_variables:
      if 'moving_mean' in v.path:
        v.assign(0.1 * rng.normal(size=v.shape).astype(np.float32))
      elif 'moving_variance' in v.path:
        v.assign(rng.uniform(0.5, 2.0, size=v.shape).astype(np.float32))
  # Larger biases than the zero init, so that every layer's wiring shows in the output.
  critic.s_head.bias.assign(np.arange(K, dtype=np.float32) / 10)
  critic.body.get_layer('conv1').bias.assign(
      np.linspace(-0.1, 0.1, critic.body.get_layer('conv1').bias.shape[0]).astype(np.float32))
  x = np.random.default_rng(4).uniform(-1, 1, size=(2, 32, 32, C)).astype(np.float32)
  phi, fake, classes = numpy_critic(critic, x, norm)
  assert phi.shape == (2, 4 * 4 * 48)
  scale = np.abs(phi).max()
  np.testing.assert_allclose(critic.features(x).numpy(), phi, atol=1e-5 * scale, rtol=1e-4)
  got_fake, got_classes = critic(x)
  np.testing.assert_allclose(got_fake.numpy(), fake, atol=1e-5 * scale, rtol=1e-4)
  np.testing.assert_allclose(got_classes.numpy(), classes, atol=1e-5 * scale, rtol=1e-4)
  np.testing.assert_allclose(critic.classify(x).numpy(), classes, atol=1e-5 * scale, rtol=1e-4)


# ---------------------------------------------------------------------------------------------
# Dropout, seeds, RNG state.


@pytest.fixture(scope='module')
def small_critic():
  return critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL), K, C, seed=7)


@pytest.fixture(scope='module')
def images():
  return np.random.default_rng(5).uniform(-1, 1, size=(4, 32, 32, C)).astype(np.float32)


def test_dropout_only_in_training(small_critic, images):
  first = small_critic(images, training=False)
  second = small_critic(images, training=False)
  for a, b in zip(first, second):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  third = small_critic(images, training=True)
  fourth = small_critic(images, training=True)
  assert not np.allclose(third[1].numpy(), fourth[1].numpy())
  assert not np.allclose(third[1].numpy(), first[1].numpy())


def test_dropout_rates_and_places(small_critic, images):
  rates = {layer.name: layer.rate for layer in small_critic.body.layers
           if isinstance(layer, keras.layers.Dropout)}
  assert rates == {'dropout0': 0.2, 'dropout3': 0.5, 'dropout6': 0.5, 'dropout7': 0.5,
                   'dropout8': 0.5, 'dropout9': 0.5}
  # Input dropout: about 20% of the input zeroed, the rest scaled by 1 / 0.8.
  layer = small_critic.body.get_layer('dropout0')
  x = np.ones((64, 32, 32, C), np.float32)
  y = layer(x, training=True).numpy()
  assert abs((y == 0).mean() - 0.2) < 0.01  # n = 196,608: std 0.0009.
  np.testing.assert_allclose(y[y != 0], 1.25, rtol=1e-6)


def test_same_seed_same_critic_and_masks(images):
  a = critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL), K, C, seed=11)
  b = critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL), K, C, seed=11)
  c = critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL), K, C, seed=12)
  for va, vb in zip(a.variables, b.variables):
    np.testing.assert_array_equal(va.numpy(), vb.numpy())
  np.testing.assert_array_equal(a(images, training=True)[1].numpy(),
                                b(images, training=True)[1].numpy())
  assert not np.allclose(a.v_head.kernel.numpy(), c.v_head.kernel.numpy())
  # Each layer has its own init seed (a shared int seed would repeat values).
  kernels = [a.body.get_layer(f'conv{i}').kernel.numpy().ravel()[:50] for i in (2, 3)]
  assert not np.allclose(kernels[0], kernels[1])


def test_replica_aware_dropout_matches_keras_dropout_on_one_replica():
  x = np.ones((8, 5, 5, 4), np.float32)
  ours = critic_lib.ReplicaAwareDropout(0.5, seed=3)
  theirs = keras.layers.Dropout(0.5, seed=3)
  for _ in range(2):
    np.testing.assert_array_equal(ours(x, training=True).numpy(),
                                  theirs(x, training=True).numpy())


def test_checkpoint_restores_dropout_rng_state(images, tmp_path):
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=SMALL), K, C, seed=13)
  assert sorted(critic.dropout_rng.states) == [
      'dropout0', 'dropout3', 'dropout6', 'dropout7', 'dropout8', 'dropout9']
  checkpoint = tf.train.Checkpoint(model=critic)
  path = checkpoint.write(str(tmp_path / 'ckpt'))
  saved = [name for name, _ in tf.train.list_variables(path)]
  assert sum('dropout_rng/states' in name for name in saved) == 6
  expected = critic(images, training=True)[1].numpy()
  critic(images, training=True)  # Advances the RNG.
  checkpoint.read(path).assert_consumed()
  np.testing.assert_array_equal(critic(images, training=True)[1].numpy(), expected)


# ---------------------------------------------------------------------------------------------
# Width, dtype policies, distribution, configuration errors.


@pytest.mark.parametrize('width,expected', [(0.5, 4 * 4 * 192), (0.125, 4 * 4 * 48),
                                            (0.3, 4 * 4 * 115), (1e-3, 4 * 4 * 1)])
def test_width_multiplier_scales_phi(width, expected):
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=width), K, C, seed=0)
  assert critic.feature_dim == expected
  filters = [critic.body.get_layer(f'conv{i}').filters for i in range(1, 10)]
  scaled = [max(1, round(f * width)) for f in (96, 96, 96, 192, 192, 192, 384, 384, 384)]
  assert filters == scaled
  assert critic.v_head.kernel.shape == (expected, 1)
  assert critic.s_head.kernel.shape == (expected, K)


def test_mixed_bfloat16_outputs_are_float32_and_the_float32_critics(images):
  """Computed in bfloat16, returned in float32, and within bfloat16's precision (2^-8 per
  rounding; measured 1-2% of the outputs' norm) of the float32 critic of the same seed."""
  if precision.bfloat16_convolutions_fail():
    pytest.skip(f'no bfloat16 convolution here: {precision.bfloat16_convolutions_fail()}')
  settings = critic_lib.BuildCritic(normalization='layer_norm', width=SMALL)
  try:
    keras.mixed_precision.set_global_policy('mixed_bfloat16')
    critic = critic_lib.build_critic(settings, K, C, seed=0)
    fake, classes = critic(images, training=False)
    features = critic.features(images)
    logits = critic.classify(images)
  finally:
    keras.mixed_precision.set_global_policy('float32')
  assert critic.body.get_layer('conv2').compute_dtype == 'bfloat16'
  assert all(v.dtype == 'float32' for v in critic.trainable_variables)
  for t in (fake, classes, features, logits):
    assert t.dtype == tf.float32
  reference = critic_lib.build_critic(settings, K, C, seed=0)
  for mixed, exact in zip((fake, classes, features),
                          (*reference(images, training=False), reference.features(images))):
    exact = exact.numpy()
    assert np.linalg.norm(mixed.numpy() - exact) < 5e-2 * np.linalg.norm(exact)


@pytest.mark.numerics
def test_builds_and_trains_under_mirrored_strategy(images):
  """Built under a MirroredStrategy, the critic's variables are mirrored, and one replica's
  gradients (batch norm in training mode, dropout off) are those of the same critic built
  without a strategy."""
  settings = critic_lib.BuildCritic(normalization='batch_norm', width=SMALL,
                                    input_dropout=0.0, dropout=0.0)
  strategy = tf.distribute.MirroredStrategy(['/cpu:0'])
  with strategy.scope():
    critic = critic_lib.build_critic(settings, K, C, seed=0)
  assert isinstance(critic.v_head.kernel.value, tf.distribute.DistributedValues)
  plain = critic_lib.build_critic(settings, K, C, seed=0)

  def gradients_of(model, x):
    with tf.GradientTape() as tape:
      fake, classes = model(x, training=True)
      loss = tf.reduce_mean(fake) + tf.reduce_mean(classes)
    return tape.gradient(loss, model.trainable_variables)

  @tf.function
  def step(x):
    return strategy.run(lambda x: gradients_of(critic, x), args=(x,))

  gradients = step(tf.constant(images))
  expected = gradients_of(plain, tf.constant(images))
  assert len(gradients) == len(critic.trainable_variables) == len(expected)
  # Another graph (the replica's, traced) sums in another order: the whole vector within
  # float32 rounding (measured 4e-7 to 7e-7 of its norm on three kernel sets; single small
  # entries differ up to 1e-3 of their size under AVX2 kernels).
  got = np.concatenate([g.numpy().ravel() for g in gradients])
  want = np.concatenate([g.numpy().ravel() for g in expected])
  assert np.linalg.norm(want) > 0
  assert np.linalg.norm(got - want) < 1e-5 * np.linalg.norm(want)


def test_configuration_errors():
  with pytest.raises(errors.ConfigError, match='layer_norm_singleton_per_pixel'):
    critic_lib.build_critic(critic_lib.BuildCritic(normalization='instance_norm'), K, C)
  with pytest.raises(errors.ConfigError):
    critic_lib.build_critic(critic_lib.BuildCritic(width=0.0), K, C)
