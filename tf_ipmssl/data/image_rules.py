"""The one rule by which an image becomes the networks' input, wherever images are read
(training on an image folder, the exported classifier's graph, bin/predict, the API):
`decode` an image file's bytes (DECODING_RULE says it for a user without this library),
`to_channels`, and `fit_images` to the input size (`resize_rule` names it).
"""
import tensorflow as tf

from tf_ipmssl.data import pipelines

# The formats tf.io.decode_image reads.
IMAGE_EXTENSIONS = ('.bmp', '.gif', '.jpeg', '.jpg', '.png', '.webp')
IMAGE_FORMATS = 'PNG, JPEG, BMP, GIF or WebP'
ANIMATED_WEBP = 'an animated WebP, which TensorFlow cannot decode safely'


def resize_rule(size):
  """The resize rule to `size` (fit_images), by name, as the export's metadata and dataset.json
  hold it."""
  return f'short side to {size} (bilinear, antialiased), centre {size}x{size} crop'


def fit_images(images, size=pipelines.MODEL_IMAGE_SIZE):
  """The resize rule: uint8 images [..., H, W, C] of any one size -> uint8 [..., size, size, C].

  Resizes (bilinear, antialiased) so that the short side is `size` (the long side to the
  nearest integer, halves up), crops the centre size x size (the extra pixel of an odd margin
  on the bottom or right), rounds and clips to uint8. An image already size x size passes
  unchanged. Works in graphs with unknown H and W (the exported serving function).
  """
  images = tf.convert_to_tensor(images)
  shape = tf.shape(images)
  height, width = shape[-3], shape[-2]
  short = tf.minimum(height, width)
  # round(side * size / short) in integers, so that no float rounding can differ.
  new_height = (2 * height * size + short) // (2 * short)
  new_width = (2 * width * size + short) // (2 * short)
  resized = tf.image.resize(images, tf.stack([new_height, new_width]), method='bilinear',
                            antialias=True)
  top, left = (new_height - size) // 2, (new_width - size) // 2
  cropped = resized[..., top:top + size, left:left + size, :]
  fitted = tf.cast(tf.clip_by_value(tf.round(cropped), 0.0, 255.0), tf.uint8)
  return tf.ensure_shape(fitted, images.shape[:-3].concatenate([size, size, images.shape[-1]]))


def to_channels(image, channels):
  """uint8 [..., c] with c in 1..4 (grayscale, +alpha, colour, +alpha) as `channels` (1 or 3):
  alpha dropped, grayscale repeated into colour, colour to grayscale by
  tf.image.rgb_to_grayscale's weights."""
  count = tf.shape(image)[-1]
  gray = image[..., :1]
  colour = image[..., :3]
  if channels == 3:
    return tf.cond(count < 3, lambda: tf.concat([gray] * 3, axis=-1), lambda: colour)
  return tf.cond(count < 3, lambda: gray, lambda: tf.image.rgb_to_grayscale(colour))


def is_animated_webp(contents):
  """Whether an image file's bytes (a string scalar) are an animated WebP: a RIFF file of
  form 'WEBP' whose extended header ('VP8X') sets the animation flag (bit 1 of byte 20)."""
  header = tf.strings.substr(tf.strings.join([tf.strings.substr(contents, 0, 21), '\0' * 21]),
                             0, 21)
  flags = tf.io.decode_raw(tf.strings.substr(header, 20, 1), tf.uint8)[0]
  return tf.logical_and(
      tf.logical_and(tf.strings.substr(header, 0, 4) == 'RIFF',
                     tf.strings.substr(header, 8, 8) == 'WEBPVP8X'),
      tf.bitwise.bitwise_and(flags, 2) > 0)


def decode(contents):
  """An image file's bytes -> uint8 [H, W, c] in its own channel count: the one decoding of
  every path that reads image files (training, bin/predict, the API), by DECODING_RULE.

  A JPEG is decoded with the accurate integer IDCT (libjpeg's JDCT_ISLOW, Pillow's and
  libjpeg's default), whose pixels Pillow and C/C++ libjpeg users reproduce exactly, not
  TensorFlow's default fast IDCT (a third of the values a level or more off, up to 7). An
  animated WebP fails (InvalidArgumentError, ANIMATED_WEBP) before TensorFlow's decoder sees
  it: that decoder writes past its buffer on one whose frames lack alpha, which can kill the
  process.
  """
  still = tf.debugging.Assert(tf.logical_not(is_animated_webp(contents)), [ANIMATED_WEBP])
  with tf.control_dependencies([still]):
    return tf.cond(
        tf.io.is_jpeg(contents),
        lambda: tf.io.decode_jpeg(contents, dct_method='INTEGER_ACCURATE'),
        lambda: tf.io.decode_image(contents, dtype=tf.uint8, expand_animations=False))


# What `decode` and `to_channels` make of a file, for a user who feeds an export without
# this library (docs/serving.md#decoding-image-files).
DECODING_RULE = (
    'JPEG: accurate integer IDCT (Pillow and libjpeg defaults), RGB or grayscale as stored; '
    'PNG: 8-bit as stored, 16-bit by its high byte (v >> 8), palette expanded to RGB(A); '
    'GIF: the first frame, RGB; BMP and WebP (still) as stored; alpha dropped, never '
    'composited; then grayscale repeated into 3 channels or colour to grayscale by '
    'floor(255.5 * (0.2989 r + 0.5870 g + 0.1140 b)) with r = R / 255 etc. in float32 '
    '(tf.image.rgb_to_grayscale), as the model takes')


def is_image_name(name):
  return name.lower().endswith(IMAGE_EXTENSIONS)
