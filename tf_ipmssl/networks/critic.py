"""The critic: a Salimans-style CNN body Φ with heads v (fake) and S (classes).

See docs/algorithm.md#critic.

  fake_logit = v · Φ(x)          (Dense(1), no bias)
  class_logits = S(Φ(x)) = W_S Φ(x) + b_S   (Dense(K), with bias)

Φ, layer by layer (width multiplier w scales 96 / 192 / 384; Norm is the critic
normalization, docs/algorithm.md#critic-normalization):

   0  Dropout(0.2)                                            32x32xC
   1  Conv 3x3 s1 'same' 96, bias, LReLU(0.2)  (never normed) 32x32x96
   2  Conv 3x3 s1 'same' 96, Norm, LReLU                      32x32x96
   3  Conv 3x3 s2 'same' 96, Norm, LReLU, Dropout(0.5)        16x16x96
   4  Conv 3x3 s1 'same' 192, Norm, LReLU                     16x16x192
   5  Conv 3x3 s1 'same' 192, Norm, LReLU                     16x16x192
   6  Conv 3x3 s2 'same' 192, Norm, LReLU, Dropout(0.5)       8x8x192
   7  Conv 3x3 'valid' 384, Norm, LReLU, Dropout(0.5)         6x6x384
   8  Conv 3x3 'valid' 384, Norm, LReLU, Dropout(0.5)         4x4x384
   9  Conv 1x1 384, Norm, LReLU, Dropout(0.5)                 4x4x384
   Φ  flatten                                                 6144

That is the paper's network, for 32x32 inputs. At the other sizes of
dataset_specs.IMAGE_SIZES the critic first brings the map to 32x32 and is then the same,
so that the two 'valid' convs always start from the paper's 8x8 map: after conv 1 (at the
input size) come the reduction blocks of `REDUCTION_STRIDES`, each a Conv 3x3 of stride s,
'same', 96 filters, Norm, LReLU, without dropout (the paper's dropouts stay where they are):

  64x64: one block of stride 2 (64 -> 32), one per doubling;
  96x96: one block of stride 3 (96 -> 32), whose 3x3 windows tile the map exactly (no
         padding, every pixel read once); a stride-2 block would leave 48, which no further
         halving brings to 32.

Their kernel and Norm seeds come from their own stream (CRITIC_REDUCTION_SEED_STREAM), so the
layers of the 32x32 network keep theirs at every size: at 32 the critic is the paper's, bit
for bit.

Convs 2-9 have no bias (with 'none' they have none at all, as in the reference). Kernels
N(0, 0.02); the two biases (conv 1, S) U(±1/√fan_in), PyTorch's default that the released
code leaves in place (`bias_init = 'zeros'` for zeros). Two layout differences from the
PyTorch reference change no result: the flatten is NHWC, so Φ is a fixed permutation of the reference's NCHW flatten; and TF's
stride-2 'same' pads only after (bottom/right) where PyTorch's padding=1 pads both sides, so
the stride-2 sampling grid is shifted one pixel down and right, with the same output sizes.

Dropout RNG: every dropout layer has its own seed derived from `seed`; its state (Keras
SeedGenerator, [seed, counter]) is reachable as `critic.dropout_rng.states[layer_name]` and is
saved by tf.train.Checkpoint(model=critic), so a resumed run draws the same masks.
"""
import dataclasses
from typing import Optional

import keras
import numpy as np
import tensorflow as tf

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.networks import normalization as normalization_lib

# (filters at width 1, kernel, stride, padding, dropout after) for convs 2-9.
_NORMED_CONVS = (
    (96, 3, 1, 'same', False),
    (96, 3, 2, 'same', True),
    (192, 3, 1, 'same', False),
    (192, 3, 1, 'same', False),
    (192, 3, 2, 'same', True),
    (384, 3, 1, 'valid', True),
    (384, 3, 1, 'valid', True),
    (384, 1, 1, 'valid', True),
)
_CONV1_FILTERS = 96
# Input size -> the strides of the reduction blocks that bring conv 1's map to 32x32
# (module doc); their filters at width 1.
REDUCTION_STRIDES = {32: (), 64: (2,), 96: (3,)}
_REDUCTION_FILTERS = 96
BIAS_INITS = ('pytorch_uniform', 'zeros')
# Seed streams of derive_seeds(): one per network, and the layers that only some input sizes
# have draw from their own, so that the 32x32 network's layers keep their seeds.
CRITIC_SEED_STREAM = 1
GENERATOR_SEED_STREAM = 2
CRITIC_BIAS_SEED_STREAM = 3
CRITIC_REDUCTION_SEED_STREAM = 4
GENERATOR_UPSAMPLING_SEED_STREAM = 5


def scaled_width(filters, width):
  """round(filters · width), at least 1."""
  return max(1, int(round(filters * width)))


def derive_seeds(seed, count, stream):
  """`count` distinct int seeds derived from (`seed`, `stream`); all None when seed is None.

  Keras initializers with an int seed return the same values at every call, so each layer
  needs its own seed; `stream` keeps networks built from one run seed independent.
  """
  if seed is None:
    return [None] * count
  sequence = np.random.SeedSequence(seed, spawn_key=(stream,))
  return [int(s) % (2**31 - 1) for s in sequence.generate_state(count)]


class ReplicaAwareDropout(keras.layers.Dropout):
  """keras.layers.Dropout whose masks differ between tf.distribute replicas.

  Keras's Dropout draws its mask from a SeedGenerator whose state is mirrored, so under
  MirroredStrategy every replica would drop the same positions of its shard. Here the
  per-call seed (the SeedGenerator's [seed, counter], advanced once per call) is folded with
  the replica id when there is more than one replica. With one replica the masks are those of
  keras.layers.Dropout with the same seed.
  """

  def call(self, inputs, training=False):
    if not training or self.rate == 0.0:
      return inputs
    seed = self.seed_generator.next()
    # As keras' TF backend: stateless ops want an int32 seed (XLA), the state is int64.
    seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
      seed = tf.random.experimental.stateless_fold_in(seed, context.replica_id_in_sync_group)
    noise_shape = tf.shape(inputs)
    if self.noise_shape is not None:
      noise_shape = [noise_shape[i] if d is None else d for i, d in enumerate(self.noise_shape)]
    return tf.nn.experimental.stateless_dropout(
        inputs, rate=self.rate, noise_shape=noise_shape, seed=seed)


class Critic(keras.Model):
  """Critic body Φ with heads v and S; see the module docstring for the layers.

  call(x) returns (v·Φ(x) of shape [B], S(Φ(x)) of shape [B, K]), both float32 whatever the
  dtype policy. Weight-decay groups (docs/algorithm.md#optimizer-and-weight-decay):
  `v_variables` (1e-3) and `phi_and_s_variables` (1e-6). The dropout RNG states are exposed
  as `dropout_rng`, a tf.Module, so that tf.train.Checkpoint(model=critic) saves and restores
  them (Keras 3 does not track them).
  """

  def __init__(self, body, v_head, s_head, normalization, **kwargs):
    """Wraps a built body Φ and the two heads; use build_critic() rather than this."""
    super().__init__(**kwargs)
    self.body = body
    self.v_head = v_head
    self.s_head = s_head
    self.normalization = normalization
    self.num_classes = s_head.units
    self.image_size = body.input_shape[1]
    self.feature_dim = int(np.prod(body.output_shape[1:]))
    self.dropout_rng = tf.Module(name='dropout_rng')
    self.dropout_rng.states = {
        layer.name: layer.seed_generator.state for layer in body.layers
        if isinstance(layer, keras.layers.Dropout) and hasattr(layer, 'seed_generator')}
    self.v_head.build((None, self.feature_dim))
    self.s_head.build((None, self.feature_dim))
    self.built = True

  @property
  def has_batch_norm(self):
    return self.normalization == 'batch_norm'

  @property
  def v_variables(self):
    """The v head's kernel: the 1e-3 weight-decay group (empty while frozen)."""
    return list(self.v_head.trainable_variables)

  @property
  def phi_and_s_variables(self):
    """Every other trainable variable (Φ and S): the 1e-6 weight-decay group."""
    v_ids = {id(v) for v in self.v_variables}
    return [v for v in self.trainable_variables if id(v) not in v_ids]

  def features(self, x, training=False):
    """Φ(x), [B, feature_dim], float32."""
    return tf.cast(self.body(x, training=training), tf.float32)

  def classify(self, x, training=False):
    """S(Φ(x)), [B, K] float32: the classifier that is evaluated and exported."""
    return tf.cast(self.s_head(self.body(x, training=training)), tf.float32)

  def call(self, x, training=False):
    """(v·Φ(x) [B], S(Φ(x)) [B, K]), both float32; one pass through Φ."""
    phi = self.body(x, training=training)
    fake_logit = tf.squeeze(tf.cast(self.v_head(phi), tf.float32), axis=-1)
    class_logits = tf.cast(self.s_head(phi), tf.float32)
    return fake_logit, class_logits


@dataclasses.dataclass(frozen=True)
class BuildCritic:
  """The critic's settings, `build_critic.*` in gin (the run supplies the rest: the classes,
  channels and input size of the data, the seed)."""
  # One of normalization.NORMALIZATIONS, after convs 2-9
  # (docs/algorithm.md#critic-normalization).
  normalization: str = 'none'
  # Multiplier on the 96 / 192 / 384 filters (1.0 in the paper).
  width: float = 1.0
  # Dropout rate on the input (layer 0).
  input_dropout: float = 0.2
  # Dropout rate after layers 3, 6, 7, 8 and 9.
  dropout: float = 0.5
  # Negative slope of every LeakyReLU.
  leaky_relu_slope: float = 0.2
  # Stddev of the N(0, ·) conv and dense kernel init.
  init_stddev: float = 0.02
  # The conv-1 and S biases: 'pytorch_uniform' (U(±1/√fan_in), PyTorch's default, which the
  # released code keeps) or 'zeros'.
  bias_init: str = 'pytorch_uniform'

  def __post_init__(self):
    """A ConfigError naming the binding for a value of the wrong type, range or choice."""
    if self.normalization not in normalization_lib.NORMALIZATIONS:
      raise errors.ConfigError(
          f'Unknown critic normalization {self.normalization!r}; valid: '
          f'{", ".join(normalization_lib.NORMALIZATIONS)}.')
    errors.check_number('build_critic.width', self.width, low=0.0, low_inclusive=False)
    errors.check_number('build_critic.input_dropout', self.input_dropout, low=0.0, high=1.0)
    errors.check_number('build_critic.dropout', self.dropout, low=0.0, high=1.0)
    errors.check_number('build_critic.leaky_relu_slope', self.leaky_relu_slope)
    errors.check_number('build_critic.init_stddev', self.init_stddev, low=0.0,
                        low_inclusive=False)
    if self.bias_init not in BIAS_INITS:
      raise errors.ConfigError(f'build_critic.bias_init = {self.bias_init!r} is not one of '
                               f'{list(BIAS_INITS)}')


def _check_arguments(num_classes, input_channels, image_size):
  """A ConfigError for an argument of build_critic the run supplies (its settings checked
  themselves when made)."""
  dataset_specs.check_image_size('build_critic image_size', image_size)
  if num_classes < 1 or input_channels < 1:
    raise errors.ConfigError(
        f'build_critic needs num_classes >= 1 and input_channels >= 1; got '
        f'{num_classes}, {input_channels}.')


def build_critic(settings: BuildCritic, num_classes: int, input_channels: int,
                 image_size: int = 32, seed: Optional[int] = None):
  """Builds the critic; variables exist on return (call it inside a strategy scope).

  Args:
    settings: its BuildCritic settings.
    num_classes: K, the width of the class head S.
    input_channels: C of the [B, image_size, image_size, C] input in [-1, 1].
    image_size: input height and width, one of dataset_specs.IMAGE_SIZES (32, the paper's;
      64 and 96 add the reduction blocks of the module doc). Φ is 4·4·384·width at each.
    seed: int making the init and the dropout masks reproducible; None draws one.

  Returns:
    A built Critic.

  Raises:
    errors.ConfigError: an image_size not in dataset_specs.IMAGE_SIZES, no classes or
      channels.
  """
  _check_arguments(num_classes, input_channels, image_size)
  # One seed per kernel initializer, batch-norm gamma and dropout layer; 32 is enough.
  # The bias seeds come from their own stream so the other draws keep their seeds.
  seeds = iter(derive_seeds(seed, 32, stream=CRITIC_SEED_STREAM))
  bias_seeds = iter(derive_seeds(seed, 2, stream=CRITIC_BIAS_SEED_STREAM))

  def bias_initializer(fan_in):
    if settings.bias_init == 'zeros':
      return 'zeros'
    bound = 1.0 / np.sqrt(fan_in)
    return keras.initializers.RandomUniform(-bound, bound, seed=next(bias_seeds))

  def kernel_init():
    return keras.initializers.RandomNormal(stddev=settings.init_stddev, seed=next(seeds))

  def dropout_layer(rate, name):
    return ReplicaAwareDropout(rate, seed=next(seeds), name=name)

  layers = [
      keras.Input((image_size, image_size, input_channels)),
      dropout_layer(settings.input_dropout, 'dropout0'),
      keras.layers.Conv2D(scaled_width(_CONV1_FILTERS, settings.width), 3, padding='same',
                          use_bias=True, kernel_initializer=kernel_init(),
                          bias_initializer=bias_initializer(3 * 3 * input_channels),
                          name='conv1'),
      keras.layers.LeakyReLU(settings.leaky_relu_slope, name='lrelu1'),
  ]
  layers += _reduction_blocks(settings, image_size, seed)
  for index, (filters, kernel, stride, padding, drop) in enumerate(_NORMED_CONVS, start=2):
    layers += [
        keras.layers.Conv2D(scaled_width(filters, settings.width), kernel, strides=stride,
                            padding=padding, use_bias=False, kernel_initializer=kernel_init(),
                            name=f'conv{index}'),
        normalization_lib.make_normalization(settings.normalization, seed=next(seeds),
                                             layer_name=f'norm{index}'),
        keras.layers.LeakyReLU(settings.leaky_relu_slope, name=f'lrelu{index}'),
    ]
    if drop:
      layers.append(dropout_layer(settings.dropout, f'dropout{index}'))
  layers.append(keras.layers.Flatten(name='phi'))
  body = keras.Sequential(layers, name='body')
  feature_dim = int(np.prod(body.output_shape[1:]))
  v_head = keras.layers.Dense(1, use_bias=False, kernel_initializer=kernel_init(), name='v')
  s_head = keras.layers.Dense(num_classes, use_bias=True, kernel_initializer=kernel_init(),
                              bias_initializer=bias_initializer(feature_dim), name='s')
  return Critic(body, v_head, s_head, settings.normalization, name='critic')


def _reduction_blocks(settings, image_size, seed):
  """The layers that bring conv 1's image_size map to 32x32 (REDUCTION_STRIDES, module
  doc), seeded from CRITIC_REDUCTION_SEED_STREAM; none at 32."""
  strides = REDUCTION_STRIDES[image_size]
  seeds = iter(derive_seeds(seed, 2 * len(strides), stream=CRITIC_REDUCTION_SEED_STREAM))
  layers = []
  for index, stride in enumerate(strides, start=1):
    layers += [
        keras.layers.Conv2D(scaled_width(_REDUCTION_FILTERS, settings.width), 3,
                            strides=stride, padding='same', use_bias=False,
                            kernel_initializer=keras.initializers.RandomNormal(
                                stddev=settings.init_stddev, seed=next(seeds)),
                            name=f'reduce{index}'),
        normalization_lib.make_normalization(settings.normalization, seed=next(seeds),
                                             layer_name=f'reduce_norm{index}'),
        keras.layers.LeakyReLU(settings.leaky_relu_slope, name=f'reduce_lrelu{index}'),
    ]
  return layers


# build_critic.* in gin: its settings, read into the run configuration (run_config.py).
GROUP = builder_settings.Group.of_dataclass('build_critic', BuildCritic)
