"""Classification error of the critic's classifier argmax_y S(Φ(x)), in percent as
reporting.percent makes it (100 · 2556 / 10000 = 25.56; reporting.py: what a run reports),
and its confusion matrix (run_dir/class_results.py: per-class results).

See docs/algorithm.md#data-and-model-selection.
"""
import numpy as np
import tensorflow as tf

from tf_ipmssl.data import pipelines
from tf_ipmssl.run_dir import class_results
from tf_ipmssl.run_dir import reporting


def make_predict_fn(critic, jit_compile=False):
  """A tf.function mapping a model-ready batch to predicted labels (dropout off)."""
  @tf.function(jit_compile=jit_compile, reduce_retracing=True, autograph=False)
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
  return reporting.percent(wrong, len(labels))



def confusion_matrix(predict_fn, images, labels, num_classes, batch_size=256):
  """int64 [K, K] confusion matrix (rows the true class) of every example of (images,
  labels), predicted in `error_rate`'s batches: its error, class_results.error, is the one
  error_rate counts."""
  confusion = np.zeros([num_classes, num_classes], np.int64)
  for x, y in pipelines.eval_batches(images, labels, batch_size=batch_size):
    confusion += class_results.confusion_matrix(y.numpy(), predict_fn(x).numpy(), num_classes)
  return confusion
