"""Critic normalization layers (docs/algorithm.md#critic-normalization;
paper §2.3, "How to normalize the critic").

For NHWC activations a ∈ R^{N×H×W×C} every layer here computes

  y = g · (a − μ) / sqrt(σ² + ε) + b,

with σ² the biased variance and ε inside the square root. They differ in where μ, σ², g, b
live:

  name                                 μ, σ² per example over   g, b shape
  'batch_norm'                         (N, H, W) per channel    [C]  (statistics over the batch)
  'layer_norm_singleton_per_channel'   (H, W, C)                [C]
  'layer_norm_singleton_per_pixel'     (H, W, C)                [H, W]
  'layer_norm_per_channel_per_channel' (H, W) per channel       [C]
  'layer_norm_per_channel_per_pixel'   (H, W) per channel       [H, W]
  'layer_norm'                         alias of singleton / per-channel, the paper's pick
  'none'                               identity

`make_normalization(name)` is the one way to get any of them.
"""
import keras
import tensorflow as tf

from tf_ipmssl import errors

BATCH_NORM_EPSILON = 1e-5
# Keras momentum is the weight of the old moving average: 1 − PyTorch's momentum 0.1.
BATCH_NORM_MOMENTUM = 0.9
BATCH_NORM_GAMMA_STDDEV = 0.02
LAYER_NORM_EPSILON = 1e-5

_LAYER_NORM_STATS = ('singleton', 'per_channel')
_LAYER_NORM_PARAMS = ('per_channel', 'per_pixel')
_LAYER_NORM_ALIAS = 'layer_norm'
_RECOMMENDED_LAYER_NORM = ('singleton', 'per_channel')

NORMALIZATIONS = (
    'none',
    'batch_norm',
    _LAYER_NORM_ALIAS,
    'layer_norm_singleton_per_channel',
    'layer_norm_singleton_per_pixel',
    'layer_norm_per_channel_per_channel',
    'layer_norm_per_channel_per_pixel',
)


class ConfigurableLayerNorm(keras.layers.Layer):
  """Layer norm for NHWC activations with a choice of statistics and parameter shapes.

  y = g · (a − μ) / sqrt(σ² + ε) + b  (paper §2.3), per example, where

  * stats='singleton': μ, σ² ∈ R^{1×1×1}, mean and biased variance over (H, W, C);
    stats='per_channel': μ, σ² ∈ R^{1×1×C}, over (H, W) for each channel.
  * params='per_channel': g, b ∈ R^C, broadcast over (H, W);
    params='per_pixel': g, b ∈ R^{H×W}, broadcast over C (needs static H and W).

  g starts at 1 and b at 0 (as torch.nn.LayerNorm and the authors' LayerNorm module; the
  N(1, 0.02) init of docs/algorithm.md#critic is for BN gamma only). Statistics and the
  affine map are computed in float32 whatever the dtype policy; the result is cast back to
  the layer's compute dtype.

  The authors' release had a second implementation of singleton / per-channel ("layernormI")
  that used the unbiased variance; we follow the paper's formula (biased). With
  at least H·W·C = 6144 values per example the two differ by a factor under 1 + 2e-4.
  """

  def __init__(self, stats='singleton', params='per_channel', epsilon=LAYER_NORM_EPSILON,
               **kwargs):
    super().__init__(**kwargs)
    errors.check_choice(stats, _LAYER_NORM_STATS, 'layer-norm stats')
    errors.check_choice(params, _LAYER_NORM_PARAMS, 'layer-norm params')
    self.stats = stats
    self.params = params
    self.epsilon = float(epsilon)
    # Variables stay float32 inside call() under mixed precision; we cast ourselves.
    self.autocast = False

  def build(self, input_shape):
    if len(input_shape) != 4:
      raise ValueError(f'ConfigurableLayerNorm expects NHWC input, got shape {input_shape}.')
    _, height, width, channels = input_shape
    if self.params == 'per_channel':
      shape = (channels,)
    else:
      if height is None or width is None:
        raise ValueError('params="per_pixel" needs a static height and width, got '
                         f'input shape {input_shape}.')
      shape = (height, width)
    self.gamma = self.add_weight(name='gamma', shape=shape, initializer='ones',
                                 dtype='float32', autocast=False)
    self.beta = self.add_weight(name='beta', shape=shape, initializer='zeros',
                                dtype='float32', autocast=False)

  def call(self, inputs):
    x = tf.cast(inputs, tf.float32)
    axes = (1, 2, 3) if self.stats == 'singleton' else (1, 2)
    # Twice differentiable moments (not tf.nn.moments, whose variance is centred on
    # stop_gradient(mean): see BatchNormalization below).
    mean = tf.reduce_mean(x, axis=axes, keepdims=True)
    variance = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=axes, keepdims=True)
    gamma, beta = self.gamma, self.beta
    if self.params == 'per_pixel':
      gamma = gamma[..., None]
      beta = beta[..., None]
    # g·(x − μ)/sqrt(σ² + ε) + b as one multiply-add over the activations, x·s + o with
    # s = g·rsqrt(σ² + ε) and o = b − μ·s on the small [N, 1|H, 1|W, 1|C] tensors: two
    # passes fewer in forward and backward (docs/performance.md, "Layer norm formula").
    scale = gamma * tf.math.rsqrt(variance + self.epsilon)
    offset = beta - mean * scale
    return tf.cast(x * scale + offset, self.compute_dtype)

  def compute_output_shape(self, input_shape):
    return input_shape

  def get_config(self):
    config = super().get_config()
    config.update(stats=self.stats, params=self.params, epsilon=self.epsilon)
    return config


class BatchNormalization(keras.layers.BatchNormalization):
  """keras.layers.BatchNormalization whose batch statistics are twice differentiable.

  tf.nn.moments (behind Keras's BN) computes the variance around stop_gradient(mean): first
  derivatives are unaffected, second derivatives are wrong, and the Sobolev and gradient-
  penalty constraints differentiate the critic twice (∂/∂w of ∇_x h). Here
  σ² = mean((a − μ)²) keeps the full graph. The synchronized (multi-replica) statistics of
  Keras, E[a²] − E[a]², have no stop_gradient and are kept.
  """

  def _moments(self, inputs, mask):
    if mask is not None or self.synchronized:
      return super()._moments(inputs, mask)
    # Statistics in float32 at least (bfloat16/float16 are too coarse for them).
    x = inputs if inputs.dtype in (tf.float32, tf.float64) else tf.cast(inputs, tf.float32)
    mean = tf.reduce_mean(x, axis=self._reduction_axes)
    variance = tf.reduce_mean(tf.square(x - mean), axis=self._reduction_axes)
    return tf.cast(mean, inputs.dtype), tf.cast(variance, inputs.dtype)


def make_batch_norm(seed=None, name=None):
  """BatchNormalization as in the reference (PyTorch BatchNorm2d defaults, DCGAN init).

  y = γ (a − μ_B) / sqrt(σ²_B + ε) + β with batch statistics over (N, H, W) in training,
  moving averages m ← 0.9 m + 0.1 s in inference; ε = 1e-5, γ ~ N(1, 0.02),
  β = 0 (docs/algorithm.md#critic).
  One difference from PyTorch remains: Keras updates the moving variance with the biased batch
  variance, PyTorch with the unbiased one (factor n/(n−1), n = N·H·W ≥ 64·16).

  Built inside a multi-replica tf.distribute scope it is synchronized: the statistics are those
  of the global batch (all-reduced), so a multi-replica step computes what one device computes
  on the whole batch. (On one device the plain layer is used: its two-pass variance is more
  accurate than the synchronized E[a²] − E[a]².)
  """
  return BatchNormalization(
      momentum=BATCH_NORM_MOMENTUM,
      synchronized=tf.distribute.get_strategy().num_replicas_in_sync > 1,
      epsilon=BATCH_NORM_EPSILON,
      gamma_initializer=keras.initializers.RandomNormal(
          mean=1.0, stddev=BATCH_NORM_GAMMA_STDDEV, seed=seed),
      beta_initializer='zeros',
      name=name)


def make_normalization(name, seed=None, layer_name=None):
  """The critic normalization layer called `name`, one of NORMALIZATIONS.

  Args:
    name: one of NORMALIZATIONS.
    seed: seed of the batch-norm gamma initializer (other layers start deterministic).
    layer_name: Keras name of the returned layer.

  Returns:
    A keras.layers.Layer mapping NHWC activations to the same shape ('none': identity).

  Raises:
    errors.ConfigError: `name` is not one of NORMALIZATIONS.
  """
  if name == 'none':
    return keras.layers.Identity(name=layer_name)
  if name == 'batch_norm':
    return make_batch_norm(seed=seed, name=layer_name)
  if name == _LAYER_NORM_ALIAS:
    stats, params = _RECOMMENDED_LAYER_NORM
    return ConfigurableLayerNorm(stats=stats, params=params, name=layer_name)
  for stats in _LAYER_NORM_STATS:
    for params in _LAYER_NORM_PARAMS:
      if name == f'layer_norm_{stats}_{params}':
        return ConfigurableLayerNorm(stats=stats, params=params, name=layer_name)
  raise errors.ConfigError(
      f'Unknown critic normalization {name!r}; valid: {", ".join(NORMALIZATIONS)}.')
