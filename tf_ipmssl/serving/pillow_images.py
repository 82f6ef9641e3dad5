"""Image files decoded with Pillow by the library's one decoding rule
(data/image_folder.py's DECODING_RULE), for serving without TensorFlow: the pixels that
`bin/predict` and training get from TensorFlow's decoders, from Pillow and NumPy alone.

  read_image(path, channels) -> uint8 [H, W, channels]

JPEG: Pillow's default decoding is libjpeg's accurate integer IDCT, the rule's; PNG: 8-bit as
stored, 16-bit by the high byte (v >> 8); a palette expanded to its colours; GIF: the first
frame; alpha dropped, never composited; then to `channels`: grayscale repeated into three,
colour to grayscale by tf.image.rgb_to_grayscale's float32 arithmetic. An animated WebP is
refused, as the rule refuses it. This module imports neither TensorFlow nor Keras (Pillow
only when called).
"""
import numpy as np

from tf_ipmssl import errors

# tf.image.rgb_to_grayscale's weights, and its arithmetic: r = R / 255 in float32, the
# weighted sum, then floor(255.5 * sum) (its float-to-uint8 conversion).
GRAYSCALE_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], np.float32)


def to_grayscale(rgb: np.ndarray) -> np.ndarray:
  """uint8 [..., 1] of uint8 colour [..., 3], as tf.image.rgb_to_grayscale computes it."""
  scaled = rgb.astype(np.float32) * np.float32(1 / 255)
  return np.floor(scaled @ GRAYSCALE_WEIGHTS * np.float32(255.5)).astype(np.uint8)[..., None]


def _pixels(image) -> np.ndarray:
  """uint8 [H, W, c] of a Pillow image's first frame: c = 1 (grayscale) or 3 (colour)."""
  if image.mode in ('I;16', 'I;16B', 'I;16L', 'I'):
    values = np.asarray(image).astype(np.int64)
    return (np.clip(values, 0, 65535) >> 8).astype(np.uint8)[..., None]
  if image.mode in ('L', 'LA', '1'):
    return np.asarray(image.convert('L'), np.uint8)[..., None]
  # RGB, RGBA, P, PA, CMYK, YCbCr...: colour, alpha dropped (Pillow's RGBA -> RGB drops it).
  return np.asarray(image.convert('RGB'), np.uint8)


def read_image(path, channels: int) -> np.ndarray:
  """uint8 [H, W, channels] (channels 1 or 3) of the image file at `path`, by the decoding
  rule (the module doc); a UserError naming the file when it is not a readable image or is
  an animated WebP."""
  from PIL import Image, UnidentifiedImageError  # pylint: disable=g-import-not-at-top
  if channels not in (1, 3):
    raise ValueError(f'channels must be 1 or 3, got {channels}')
  try:
    with Image.open(path) as image:
      if image.format == 'WEBP' and getattr(image, 'is_animated', False):
        raise errors.UserError(f'{path} is an animated WebP; save its first frame as a still '
                               'image')
      image.seek(0)
      pixels = _pixels(image)
  except (UnidentifiedImageError, OSError) as e:
    raise errors.UserError(f'{path} is not a readable image ({e})') from None
  if channels == 3 and pixels.shape[-1] == 1:
    return np.repeat(pixels, 3, axis=-1)
  if channels == 1 and pixels.shape[-1] == 3:
    return to_grayscale(pixels)
  return pixels
