"""An exponential moving average (EMA) of the critic's weights, for evaluation and export.

Not part of the paper: an option (`train.critic_ema_decay`) that evaluates, selects and
exports a copy of the critic whose weights are an EMA of the trained critic's. GAN critics
move a lot from one update to the next; the averaged weights classify more steadily.

After the n-th critic update (n = 1, 2, …), with the trained weights w and decay d:

  d_n = min(d, (1 + n) / (10 + n))          (tf.train.ExponentialMovingAverage's num_updates)
  w̄ ← d_n · w̄ + (1 − d_n) · w

so the average is not dominated by the initial weights in short runs. Integer variables
(dropout RNG states) are not averaged; the averaged critic is only run with dropout off.
"""
import keras
import tensorflow as tf


def averaged_pairs(critic, averaged_critic):
  """(averaged, trained) variable pairs over every float variable of the two critics."""
  pairs = []
  for averaged, trained in zip(averaged_critic.weights, critic.weights):
    if averaged.shape != trained.shape:
      raise ValueError(f'the averaged critic does not match the critic at {trained.path}')
    if keras.backend.is_float_dtype(trained.dtype):
      pairs.append((averaged, trained))
  return pairs


def effective_decay(decay, num_updates):
  """min(decay, (1 + n) / (10 + n)) for the n-th update (float32 tensor)."""
  n = tf.cast(num_updates, tf.float32)
  return tf.minimum(tf.cast(decay, tf.float32), (1.0 + n) / (10.0 + n))


def copy_weights(pairs):
  for averaged, trained in pairs:
    averaged.assign(trained)


def update_average(pairs, decay, num_updates):
  """w̄ ← d_n · w̄ + (1 − d_n) · w for each (w̄, w) pair; `num_updates` = n ≥ 1."""
  d = effective_decay(decay, num_updates)
  for averaged, trained in pairs:
    d_var = tf.cast(d, averaged.dtype)
    averaged.assign(d_var * averaged + (1 - d_var) * tf.cast(trained, averaged.dtype))
