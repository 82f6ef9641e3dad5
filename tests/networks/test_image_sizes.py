"""The networks at each input size (docs/algorithm.md#image-sizes): shapes, the critic's 8x8
map before its 'valid' convs, the 32x32 networks unchanged, and the added layers' own seeds."""
import hashlib

import numpy as np
import pytest

from tests.networks import test_critic
from tests.networks import test_generator
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib

SIZES = dataset_specs.IMAGE_SIZES
WIDTH = 0.25  # 24 / 48 / 96 filters.
NGF = 16
K = 10
# SHA-256 (weights_digest) of the 32x32 networks of seed 7 as built before the image sizes
# existed (critic: width 0.25, no normalization, C = 3, with its dropout seeds; generator:
# ngf 16, C = 3). Keras draws an initializer's values statelessly from its seed.
CRITIC_32_DIGEST = '6a13b3abd2cd58ad4cf4b73a8966b12e8dd05b1f81aec2634e31c92860828dea'
GENERATOR_32_DIGEST = '05a6ab4b0fddb9e43d2e49ab43c029889fd88cf16b0005ced6a124346bd7f95c'


def weights_digest(network):
  """SHA-256 over every weight (by path: dtype, shape, bytes) and, for a critic, its dropout
  seed states."""
  digest = hashlib.sha256()
  values = {v.path: v.numpy() for v in network.weights}
  if isinstance(network, critic_lib.Critic):
    values.update({f'dropout_rng/{name}': state.numpy()
                   for name, state in network.dropout_rng.states.items()})
  for name in sorted(values):
    digest.update(f'{name} {values[name].dtype} {values[name].shape}\n'.encode())
    digest.update(values[name].tobytes())
  return digest.hexdigest()


@pytest.fixture(scope='module')
def critics():
  return {size: critic_lib.build_critic(critic_lib.BuildCritic(width=WIDTH), K, 3, image_size=size,
                                        seed=7)
          for size in SIZES}


@pytest.fixture(scope='module')
def generators():
  return {size: generator_lib.build_generator(generator_lib.BuildGenerator(ngf=NGF), 3,
                                              image_size=size, seed=7)
          for size in SIZES}


def test_each_allowed_size_has_a_rule_in_both_networks():
  assert tuple(critic_lib.REDUCTION_STRIDES) == SIZES == tuple(generator_lib.SIZE_LAYOUTS)
  for size, (seed_side, upsamplings) in generator_lib.SIZE_LAYOUTS.items():
    assert seed_side * 2 ** (3 + upsamplings) == size
  for size, strides in critic_lib.REDUCTION_STRIDES.items():
    assert size // int(np.prod(strides, dtype=int)) == 32


@pytest.mark.parametrize('size', SIZES)
def test_critic_shapes_and_the_map_before_the_valid_convs(critics, size):
  critic = critics[size]
  assert critic.image_size == size
  assert critic.body.input_shape == (None, size, size, 3)
  # The paper's 8x8 map reaches conv 7 at every size; Φ keeps its size.
  assert critic.body.get_layer('conv7').input.shape == (None, 8, 8, 48)
  assert critic.body.get_layer('conv2').input.shape == (None, 32, 32, 24)
  assert critic.feature_dim == 4 * 4 * 96
  images = np.random.default_rng(size).uniform(-1, 1, [2, size, size, 3]).astype(np.float32)
  fake_logit, class_logits = critic(images, training=True)
  assert fake_logit.shape == (2,) and class_logits.shape == (2, K)


@pytest.mark.parametrize('size, layers', [
    (32, []), (64, [('reduce1', 2, 32)]), (96, [('reduce1', 3, 32)])])
def test_critic_reduction_blocks(critics, size, layers):
  body = critics[size].body
  found = [(layer.name, layer.strides[0], layer.output.shape[1]) for layer in body.layers
           if layer.name.startswith('reduce') and hasattr(layer, 'strides')]
  assert found == layers
  names = [layer.name for layer in body.layers]
  assert names.index('lrelu1') < names.index('conv2')
  if layers:  # Right after conv 1, normed, no dropout of its own.
    assert names[names.index('lrelu1') + 1:names.index('conv2')] == [
        'reduce1', 'reduce_norm1', 'reduce_lrelu1']


@pytest.mark.parametrize('size', SIZES)
def test_generator_shapes(generators, size):
  generator = generators[size]
  assert generator.image_size == size
  seed_side = generator_lib.SIZE_LAYOUTS[size][0]
  assert generator.body.get_layer('convt1').output.shape == (None, seed_side, seed_side, 4 * NGF)
  z = np.random.default_rng(size).normal(size=(2, 100)).astype(np.float32)
  x = generator(z, training=True).numpy()
  assert x.shape == (2, size, size, 3) and -1.0 <= x.min() and x.max() <= 1.0


@pytest.mark.numerics
@pytest.mark.parametrize('size, strides', [(64, (2,)), (96, (3,))])
def test_critic_forward_matches_numpy(size, strides):
  """The critic with its reduction block against NumPy (test_critic's forward, inference,
  per-pixel layer norm with random parameters so that the block's norm shows). At 96 the
  stride-3 windows tile the map: 'same' pads nothing, so it equals 'valid' there."""
  critic = critic_lib.build_critic(critic_lib.BuildCritic(
      normalization='layer_norm_singleton_per_pixel', width=1 / 8), K, 3, image_size=size,
                                   seed=1)
  test_critic.randomize_norm_parameters(critic, 2)
  critic.s_head.bias.assign(np.arange(K, dtype=np.float32) / 10)
  x = np.random.default_rng(4).uniform(-1, 1, size=(2, size, size, 3)).astype(np.float32)
  phi, fake, classes = test_critic.numpy_critic(
      critic, x, test_critic.per_pixel_singleton_layer_norm, reduction_strides=strides)
  scale = np.abs(phi).max()
  np.testing.assert_allclose(critic.features(x).numpy(), phi, atol=1e-5 * scale, rtol=1e-4)
  got_fake, got_classes = critic(x)
  np.testing.assert_allclose(got_fake.numpy(), fake, atol=1e-5 * scale, rtol=1e-4)
  np.testing.assert_allclose(got_classes.numpy(), classes, atol=1e-5 * scale, rtol=1e-4)
  if size == 96:
    (kernel,) = [w.numpy() for w in critic.body.get_layer('reduce1').weights]
    h = np.random.default_rng(5).normal(size=(1, 96, 96, kernel.shape[2]))
    np.testing.assert_array_equal(test_critic.numpy_conv(h, kernel, 3, 'same'),
                                  test_critic.numpy_conv(h, kernel, 3, 'valid'))


@pytest.mark.numerics
@pytest.mark.parametrize('size', [64, 96])
def test_generator_forward_matches_numpy(size):
  """The generator with its seed map and upsampling block against NumPy (test_generator's
  forward), in inference and on the batch's statistics."""
  generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=4), 3,
                                            image_size=size, seed=3)
  rng = test_generator.randomize(generator, 4)
  z = rng.normal(size=(4, 100))
  upsamplings = generator_lib.SIZE_LAYOUTS[size][1]
  for training in (False, True):
    expected = test_generator.numpy_generator(generator, z, training, upsamplings)
    assert expected.shape == (4, size, size, 3)
    # Mostly off tanh's flat ends and not all near 0, so the comparison means something.
    assert np.mean(np.abs(expected) < 0.99) > 0.9 and np.abs(expected).max() > 0.2
    got = generator(z.astype(np.float32), training=training).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4, err_msg=str(training))


def test_the_32_networks_are_those_of_before():
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=WIDTH), K, 3, seed=7)
  generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=NGF), 3, seed=7)
  assert weights_digest(critic) == CRITIC_32_DIGEST
  assert weights_digest(generator) == GENERATOR_32_DIGEST


@pytest.mark.parametrize('size', [64, 96])
def test_added_layers_leave_the_32_layers_seeds(size):
  """Every layer of the 32x32 networks has the same initial weights (and dropout seeds) at
  the other sizes, where its shape is the same: the added layers draw their own seeds."""
  def by_path(network):
    return {v.path.split('/', 1)[1]: v.numpy() for v in network.weights}
  critics = {s: critic_lib.build_critic(critic_lib.BuildCritic(width=WIDTH), K, 3, image_size=s,
                                        seed=7)
             for s in (32, size)}
  generators = {s: generator_lib.build_generator(generator_lib.BuildGenerator(ngf=NGF), 3,
                                                 image_size=s, seed=7)
                for s in (32, size)}
  # At 96 only the generator's seed layer (a 6x6 kernel) has another shape.
  reshaped = {'critic': set(), 'generator': {'convt1/kernel'} if size == 96 else set()}
  for name, small, large in (('critic', critics[32], critics[size]),
                             ('generator', generators[32], generators[size])):
    small_weights, large_weights = by_path(small), by_path(large)
    shared = [p for p in small_weights if small_weights[p].shape == large_weights[p].shape]
    assert set(small_weights) - set(shared) == reshaped[name]
    for path in shared:
      np.testing.assert_array_equal(small_weights[path], large_weights[path], err_msg=path)
  assert {k: v.numpy().tolist() for k, v in critics[32].dropout_rng.states.items()} == {
      k: v.numpy().tolist() for k, v in critics[size].dropout_rng.states.items()}


@pytest.mark.parametrize('size', [0, 48, 128, 32.0, None])
def test_other_sizes_are_one_config_error_naming_the_sizes(size):
  for build in (lambda: critic_lib.build_critic(critic_lib.BuildCritic(), K, 3, image_size=size),
                lambda: generator_lib.build_generator(generator_lib.BuildGenerator(), 3,
                                                      image_size=size)):
    with pytest.raises(errors.ConfigError, match='use one of 32, 64, 96'):
      build()
