"""Stateless random numbers keyed by (seed, stream, counter).

Noise for the critic's generated batch and the GP interpolation weights (the counter: the
critic updates done), the generator's noise (the steps done), the fixed sample grid and each
training stream's augmentation (its batch number) are pure functions of the run's seed and
their counter, so a resumed run draws exactly
what an uninterrupted run would (no RNG state to checkpoint), and every replica can draw the
*global* batch's noise and keep its own slice: the same numbers as on one device
(semi_supervised.SemiSupervised._noise). The algorithm is pinned to Philox. Under XLA
(jit_compile) the same seed still gives other numbers: TensorFlow's XLA kernels for these
ops draw a different stream than its CPU/GPU kernels for the same key and counter
(tests/training/test_xla_parity.py).
"""
import tensorflow as tf

CRITIC_NOISE, GENERATOR_NOISE, GP_ALPHA, SAMPLE_NOISE = 1, 2, 3, 4
# The augmentation of each training stream (data/augmentation.py), by the stream's name.
AUGMENTATION = {'labeled': 5, 'unlabeled': 6}


def stream_seed(seed, stream, counter):
  """A stateless seed [2] (int64) for draw number `counter` of `stream`."""
  return tf.stack([tf.cast(seed, tf.int64),
                   tf.cast(stream, tf.int64) * (1 << 40) + tf.cast(counter, tf.int64)])

