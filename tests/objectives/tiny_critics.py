"""Tiny critics for the objective tests, with the interface `critic_objective` expects.

A critic maps x [B, H, W, C] to (v·Φ(x) [B], S(Φ(x)) [B, K]), has a `has_batch_norm` flag
(True selects the separate-pass branch) and `v_variables` (the group with its own weight
decay). Everything here is small enough for coordinate-wise finite differences in float64.
"""
import keras
import numpy as np
import tensorflow as tf

IMAGE_SHAPE = (2, 2, 1)
INPUT_DIM = int(np.prod(IMAGE_SHAPE))
NUM_CLASSES = 3


class LinearCritic(tf.Module):
  """fake_logit = <w, x>, class_logits = x·A + c: input gradients in closed form."""

  has_batch_norm = False

  def __init__(self, w, a, c, dtype=tf.float64):
    super().__init__()
    self.w = tf.Variable(np.asarray(w), dtype=dtype, name='w')
    self.a = tf.Variable(np.asarray(a), dtype=dtype, name='a')
    self.c = tf.Variable(np.asarray(c), dtype=dtype, name='c')

  @property
  def v_variables(self):
    return [self.w]

  def __call__(self, x, training=False):
    del training  # No dropout.
    flat = tf.reshape(x, [tf.shape(x)[0], -1])
    return tf.linalg.matvec(flat, self.w), tf.matmul(flat, self.a) + self.c

  def numpy_params(self):
    return {'w': self.w.numpy(), 'a': self.a.numpy(), 'c': self.c.numpy()}


def random_linear_critic(seed=0, w_norm=None, num_classes=NUM_CLASSES):
  """A LinearCritic with N(0, 1) weights; w rescaled to norm `w_norm` if given."""
  rng = np.random.default_rng(seed)
  w = rng.normal(size=INPUT_DIM)
  if w_norm is not None:
    w *= w_norm / np.linalg.norm(w)
  return LinearCritic(w, rng.normal(size=(INPUT_DIM, num_classes)),
                      rng.normal(size=num_classes))


class BatchStatisticsNorm(keras.layers.Layer):
  """Batch norm over axis 0 (training statistics only), twice differentiable.

  Not keras.layers.BatchNormalization: its variance comes from tf.nn.moments, which uses
  stop_gradient(mean); harmless for first derivatives, but it drops terms from the second
  derivatives that Sobolev and GP need (∂Ω_GP/∂bias before the norm comes out nonzero).
  """

  def build(self, input_shape):
    self.gamma = self.add_weight(shape=input_shape[-1:], initializer='ones', name='gamma')
    self.beta = self.add_weight(shape=input_shape[-1:], initializer='zeros', name='beta')

  def call(self, x):
    mean = tf.reduce_mean(x, axis=0)
    variance = tf.reduce_mean(tf.square(x - mean), axis=0)
    return self.gamma * (x - mean) / tf.sqrt(variance + 1e-3) + self.beta


class MlpCritic(keras.Model):
  """flatten → Dense [→ batch norm] → tanh → heads v (no bias) and S (with bias), no dropout.

  `has_batch_norm` may be set without `batch_norm` layers: the critic is then per-example,
  and the separate-pass branch must give exactly what the batched one gives.
  """

  def __init__(self, hidden=3, num_classes=NUM_CLASSES, has_batch_norm=False,
               batch_norm=False, seed=0, dtype='float64'):
    super().__init__(dtype=dtype)
    self.has_batch_norm = has_batch_norm or batch_norm

    def init(offset, stddev):
      return keras.initializers.RandomNormal(stddev=stddev, seed=seed + offset)

    self.flatten = keras.layers.Flatten(dtype=dtype)
    self.hidden = keras.layers.Dense(hidden, kernel_initializer=init(1, 0.8),
                                     bias_initializer=init(2, 0.3), dtype=dtype)
    self.norm = BatchStatisticsNorm(dtype=dtype) if batch_norm else None
    self.v = keras.layers.Dense(1, use_bias=False, kernel_initializer=init(3, 0.8), dtype=dtype)
    self.s = keras.layers.Dense(num_classes, kernel_initializer=init(4, 0.8),
                                bias_initializer=init(5, 0.3), dtype=dtype)
    self(tf.zeros((2,) + IMAGE_SHAPE, dtype=dtype), training=False)  # Builds the weights.

  @property
  def v_variables(self):
    return list(self.v.trainable_variables)

  def call(self, x, training=False):
    del training  # No dropout, and the norm always uses the batch's statistics.
    pre = self.hidden(self.flatten(x))
    if self.norm is not None:
      pre = self.norm(pre)
    phi = tf.tanh(pre)
    return tf.squeeze(self.v(phi), axis=-1), self.s(phi)

  def numpy_params(self):
    """Weights for the NumPy reference; only for critics without batch norm layers."""
    assert self.norm is None
    return {'w1': self.hidden.kernel.numpy(), 'b1': self.hidden.bias.numpy(),
            'v': self.v.kernel.numpy()[:, 0], 's': self.s.kernel.numpy(),
            'c': self.s.bias.numpy()}


def random_images(rng, batch_size, dtype=np.float64):
  return rng.uniform(-1.0, 1.0, size=(batch_size,) + IMAGE_SHAPE).astype(dtype)


def random_batches(seed=0, batch_size=4, dtype=np.float64):
  """(x_labeled, y_labeled, x_real, x_fake) as NumPy arrays."""
  rng = np.random.default_rng(seed)
  x_l = random_images(rng, batch_size, dtype)
  y_l = rng.integers(0, NUM_CLASSES, size=batch_size).astype(np.int32)
  return x_l, y_l, random_images(rng, batch_size, dtype), random_images(rng, batch_size, dtype)
