"""The classifier's serving computation in ops that ONNX and LiteRT hold: what the ONNX and
LiteRT exports are converted from.

The SavedModel's serving function (export._serving_function) uses what those formats lack:
string outputs (class names), graph asserts, a tf.cond for empty batches, and
tf.image.resize's antialiased bilinear kernel (TensorFlow's ScaleAndTranslate op, which
neither tf2onnx nor the LiteRT converter translate). Here the same classifier is written
without them: uint8 images in, `probabilities` [N, K] float32, `labels` [N] int32 and the
"none of these classes" `scores` [N, S] float32 (score_graph.py) out (the
class names travel in the metadata; the runtimes in runtimes.py check shapes and answer empty
batches themselves), and the resize rule of image_rules.fit_images as two matrix products
whose weights are computed in the graph from the image's size, so that the exports still take
images of any size. The weights are those ScaleAndTranslate computes (a triangle kernel
widened by the downscaling factor, clipped at the image's edges and renormalized); summed in
another order, a few pixels in a thousand may round to the neighbouring uint8 value.
"""
import tensorflow as tf

from tf_ipmssl.data import pipelines
from tf_ipmssl.serving import score_graph


def _resample_weights(size_in, size_out, offset, count):
  """float32 [count, size_in]: output pixels offset .. offset+count-1 of a resize from size_in
  to size_out pixels along one axis (bilinear, antialiased), as rows of weights."""
  inv_scale = 1.0 / (tf.cast(size_out, tf.float32) / tf.cast(size_in, tf.float32))
  kernel_scale = tf.maximum(inv_scale, 1.0)  # Wider when downscaling: antialiasing.
  samples = (tf.cast(offset + tf.range(count), tf.float32) + 0.5) * inv_scale
  sources = tf.cast(tf.range(size_in), tf.float32) + 0.5
  weights = tf.maximum(0.0, 1.0 - tf.abs(sources[tf.newaxis, :] - samples[:, tf.newaxis])
                       / kernel_scale)
  return weights / tf.reduce_sum(weights, axis=1, keepdims=True)


def fit_images(images, size):
  """image_rules.fit_images in matrix products: uint8 [N, H, W, C] of any one size ->
  uint8 [N, size, size, C] (short side to `size`, centre crop, rounded and clipped)."""
  shape = tf.shape(images)
  height, width = shape[1], shape[2]
  short = tf.minimum(height, width)
  new_height = (2 * height * size + short) // (2 * short)
  new_width = (2 * width * size + short) // (2 * short)
  rows = _resample_weights(height, new_height, (new_height - size) // 2, size)
  columns = _resample_weights(width, new_width, (new_width - size) // 2, size)
  x = tf.transpose(tf.cast(images, tf.float32), [0, 3, 1, 2])  # [N, C, H, W]
  x = tf.matmul(tf.matmul(rows, x), columns, transpose_b=True)  # [N, C, size, size]
  x = tf.transpose(x, [0, 2, 3, 1])
  fitted = tf.cast(tf.clip_by_value(tf.round(x), 0.0, 255.0), tf.uint8)
  return tf.reshape(fitted, [-1, size, size, images.shape[-1]])


def serving_function(critic, image_shape, resize, scoring=None):
  """The computation on uint8 images [N, *image_shape] (with `resize`: [N, H, W, C] of any
  one size): the training-time input transform (pipelines.to_model_input), the classifier,
  softmax probabilities and argmax labels; with `scoring` (score_graph.fit's metadata entry)
  also the "none of these classes" `scores` [N, S]."""

  def serve(images):
    if resize:
      images = fit_images(images, image_shape[0])
    logits, answers = score_graph.served(critic, pipelines.to_model_input(images), scoring)
    return dict(answers, probabilities=tf.nn.softmax(logits, axis=-1),
                labels=tf.argmax(logits, axis=-1, output_type=tf.int32))
  return serve


def input_spec(image_shape, resize):
  """The uint8 input's TensorSpec, named 'images' (H and W unknown with `resize`)."""
  shape = [None, None, None, image_shape[-1]] if resize else [None, *image_shape]
  return tf.TensorSpec(shape, tf.uint8, name='images')
