"""Classification error of the critic's classifier argmax_y S(Φ(x)).

See docs/algorithm.md#data-and-model-selection.
"""
import tensorflow as tf

from tf_ipmssl.data import pipelines


def make_predict_fn(critic, jit_compile=False):
  """A tf.function mapping a model-ready batch to predicted labels (dropout off)."""
  @tf.function(jit_compile=jit_compile, reduce_retracing=True)
  def predict(x):
    return tf.argmax(critic.classify(x, training=False), axis=-1, output_type=tf.int32)
  return predict


def error_rate(predict_fn, images, labels, batch_size=256):
  """Misclassification rate in percent over every example of (images, labels)."""
  wrong = 0
  for x, y in pipelines.eval_stream(images, labels, batch_size=batch_size):
    wrong += int(tf.reduce_sum(tf.cast(predict_fn(x) != tf.cast(y, tf.int32), tf.int32)))
  return 100.0 * wrong / max(len(labels), 1)

