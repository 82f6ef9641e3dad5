"""The generator (docs/algorithm.md#generator): DCGAN with two extra 3x3 layers, always batch norm.

  z [B, 100] → ConvT 4x4 'valid' 4·ngf → BN, ReLU            4x4x256
             → ConvT 4x4 s2 'same' 2·ngf → BN, ReLU           8x8x128
             → ConvT 4x4 s2 'same' ngf → BN, ReLU             16x16x64
             → 2 × [Conv 3x3 s1 'same' ngf → BN, ReLU]        16x16x64
             → ConvT 4x4 s2 'same' C → tanh                   32x32xC

Widths are for ngf = 64. That is the paper's network, for 32x32 images. At the other sizes of
dataset_specs.IMAGE_SIZES (`SIZE_LAYOUTS`) the generator mirrors the critic's rule
(critic.py): the same layers with one more upsampling block, ConvT 4x4 s2 'same' ngf → BN,
ReLU, after the two 3x3 layers (one per doubling of 32), and a seed map of size/16:

  64x64: seed 4x4 (as at 32) → 8 → 16 → [upsampling] 32 → 64;
  96x96: seed 6x6 (ConvT 6x6 'valid') → 12 → 24 → [upsampling] 48 → 96, so that 96's
         factor 3 lives in the seed map, as it lives in the critic's one stride-3 block.

The upsampling blocks draw their seeds from their own stream
(critic.GENERATOR_UPSAMPLING_SEED_STREAM): at 32 the generator is the paper's, bit for bit.

No layer has a bias: BN's β follows every conv but the last, and the last ConvT feeds tanh
directly without one, as in the DCGAN reference. Kernels N(0, 0.02); BN γ ~ N(1, 0.02),
β = 0, ε = 1e-5, Keras momentum 0.9 (PyTorch 0.1).
"""
import dataclasses
from typing import Optional

import keras
import tensorflow as tf

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import normalization as normalization_lib

# Image size -> (side of the seed map, upsampling blocks added to the 32x32 network): see the
# module doc; size = seed side · 2^(3 + upsampling blocks).
SIZE_LAYOUTS = {32: (4, 0), 64: (4, 1), 96: (6, 1)}


class Generator(keras.Model):
  """g(z) = tanh(body(z)) in [-1, 1], [B, S, S, C] float32 under any dtype policy, S the
  image size."""

  def __init__(self, body, **kwargs):
    """Wraps a built body; use build_generator() rather than this."""
    super().__init__(**kwargs)
    self.body = body
    self.noise_dim = body.input_shape[-1]
    self.output_channels = body.output_shape[-1]
    self.image_size = body.output_shape[1]
    self.built = True

  def call(self, z, training=False):
    # tanh in float32 so the range is exact under mixed precision.
    return tf.tanh(tf.cast(self.body(z, training=training), tf.float32))


@dataclasses.dataclass(frozen=True)
class BuildGenerator:
  """The generator's settings, `build_generator.*` in gin (the run supplies the rest: the
  data's channels and image size, the seed)."""
  # Length of z (100 in the paper).
  noise_dim: int = 100
  # Base width; layers have 4·ngf, 2·ngf, ngf, ngf, ngf, C filters.
  ngf: int = 64
  # Stddev of the N(0, ·) kernel init.
  init_stddev: float = 0.02

  def __post_init__(self):
    """A ConfigError naming the binding for a value of the wrong type or range."""
    errors.check_number('build_generator.noise_dim', self.noise_dim, integer=True, low=1)
    errors.check_number('build_generator.ngf', self.ngf, integer=True, low=1)
    errors.check_number('build_generator.init_stddev', self.init_stddev, low=0.0,
                        low_inclusive=False)


def build_generator(settings: BuildGenerator, output_channels: int, image_size: int = 32,
                    seed: Optional[int] = None):
  """Builds the generator of docs/algorithm.md#generator; variables exist on return.

  Args:
    settings: its BuildGenerator settings.
    output_channels: C of the generated [B, image_size, image_size, C] images.
    image_size: the generated images' height and width, one of dataset_specs.IMAGE_SIZES
      (32, the paper's; SIZE_LAYOUTS for the others).
    seed: int making the init reproducible; None draws one.

  Returns:
    A built Generator.
  """
  dataset_specs.check_image_size('build_generator image_size', image_size)
  seed_side, upsamplings = SIZE_LAYOUTS[image_size]
  seeds = iter(critic_lib.derive_seeds(seed, 16, stream=critic_lib.GENERATOR_SEED_STREAM))

  def kernel_init():
    return keras.initializers.RandomNormal(stddev=settings.init_stddev, seed=next(seeds))

  def bn_relu(index):
    return [normalization_lib.make_batch_norm(seed=next(seeds), name=f'bn{index}'),
            keras.layers.ReLU(name=f'relu{index}')]

  def conv_t(filters, strides, padding, index, kernel=4):
    return keras.layers.Conv2DTranspose(filters, kernel, strides=strides, padding=padding,
                                        use_bias=False, kernel_initializer=kernel_init(),
                                        name=f'convt{index}')

  layers = [keras.Input((settings.noise_dim,)),
            keras.layers.Reshape((1, 1, settings.noise_dim), name='z_map')]
  layers += [conv_t(4 * settings.ngf, 1, 'valid', 1, kernel=seed_side)] + bn_relu(1)
  layers += [conv_t(2 * settings.ngf, 2, 'same', 2)] + bn_relu(2)
  layers += [conv_t(settings.ngf, 2, 'same', 3)] + bn_relu(3)
  for index in (4, 5):
    layers += [keras.layers.Conv2D(settings.ngf, 3, padding='same', use_bias=False,
                                   kernel_initializer=kernel_init(), name=f'conv{index}')]
    layers += bn_relu(index)
  layers += _upsampling_blocks(upsamplings, settings, seed)
  layers += [conv_t(output_channels, 2, 'same', 6)]
  body = keras.Sequential(layers, name='body')
  return Generator(body, name='generator')


def _upsampling_blocks(count, settings, seed):
  """`count` blocks ConvT 4x4 s2 'same' settings.ngf → BN, ReLU (module doc), seeded from
  critic.GENERATOR_UPSAMPLING_SEED_STREAM."""
  seeds = iter(critic_lib.derive_seeds(seed, 2 * count,
                                       stream=critic_lib.GENERATOR_UPSAMPLING_SEED_STREAM))
  layers = []
  for index in range(1, count + 1):
    layers += [
        keras.layers.Conv2DTranspose(
            settings.ngf, 4, strides=2, padding='same', use_bias=False,
            kernel_initializer=keras.initializers.RandomNormal(stddev=settings.init_stddev,
                                                               seed=next(seeds)),
            name=f'up{index}'),
        normalization_lib.make_batch_norm(seed=next(seeds), name=f'up_bn{index}'),
        keras.layers.ReLU(name=f'up_relu{index}')]
  return layers


# build_generator.* in gin: its settings, read into the run configuration (run_config.py).
GROUP = builder_settings.Group.of_dataclass('build_generator', BuildGenerator)
