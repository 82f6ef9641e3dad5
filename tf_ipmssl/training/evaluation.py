"""Classification error of the critic's classifier argmax_y S(Φ(x)).

An error rate is a count of mistakes over a known number of images, given in percent as
`percent` makes it (100 · 2556 / 10000 = 25.56). The run state keeps the errors in float32
variables; `stored_percent` turns such a value back into the rate of its count, so that what
a run reports is the same whether it comes from memory or from a checkpoint.

See docs/algorithm.md#data-and-model-selection.
"""
import math

import tensorflow as tf

from tf_ipmssl.data import pipelines


def make_predict_fn(critic, jit_compile=False):
  """A tf.function mapping a model-ready batch to predicted labels (dropout off)."""
  @tf.function(jit_compile=jit_compile, reduce_retracing=True)
  def predict(x):
    return tf.argmax(critic.classify(x, training=False), axis=-1, output_type=tf.int32)
  return predict


def error_rate(predict_fn, images, labels, batch_size=256):
  """Misclassification rate in percent over every example of (images, labels).

  The examples are predicted in order in `pipelines.eval_batches`' batches, every one of
  `batch_size` but a smaller last one: a kernel may round differently at another batch size,
  so the batches are part of what a run reports. make_predict_fn's function traces once for
  the full batches and once for any smaller one, however many evaluations a run makes."""
  wrong = 0
  for x, y in pipelines.eval_batches(images, labels, batch_size=batch_size):
    wrong += int(tf.reduce_sum(tf.cast(predict_fn(x) != y, tf.int32)))
  return percent(wrong, len(labels))


def percent(mistakes, examples):
  """The error rate in percent of `mistakes` among `examples`: 100 · mistakes / examples, one
  correctly rounded division (0 for no examples)."""
  return 100.0 * mistakes / max(examples, 1)


def stored_percent(value, examples):
  """The error rate `percent(k, examples)` whose float32 rounding is `value` (a run state's
  variable): k = round(value · examples / 100). Exact for any examples below 10^7 (float32
  keeps a rate within 4e-6 of itself, half the gap between two counts is 50 / examples); a
  non-finite value (an error not computed) is returned as it is."""
  value = float(value)
  if not math.isfinite(value):
    return value
  return percent(round(value * examples / 100.0), examples)

