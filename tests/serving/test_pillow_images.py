"""serving/pillow_images.py decodes image files by the library's one rule: its pixels equal
image_rules.decode + to_channels (TensorFlow's decoders, what bin/predict and training use)
for every format and mode, at both channel counts."""
import io

import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.data import image_rules
from tf_ipmssl.serving import pillow_images


def _smooth(rng, shape):
  """A smooth uint8 image (as photos are; random pixels stress JPEG differently)."""
  small = rng.integers(0, 256, [shape[0] // 8, shape[1] // 8, shape[2]]).astype(np.float32)
  return np.clip(tf.image.resize(small, shape[:2]).numpy(), 0, 255).astype(np.uint8)


def _files(directory):
  """{name: path} of one file per format and mode."""
  rng = np.random.default_rng(0)
  colour = _smooth(rng, (48, 40, 3))
  grey = colour[..., :1]
  alpha = rng.integers(0, 256, [48, 40, 1], dtype=np.uint8)
  files = {}

  def save(name, image, fmt, **options):
    path = directory / name
    image.save(path, fmt, **options)
    files[name] = str(path)

  save('colour.jpg', Image.fromarray(colour), 'JPEG', quality=90)
  save('colour_420.jpg', Image.fromarray(colour), 'JPEG', quality=75, subsampling=2)
  save('grey.jpg', Image.fromarray(grey[..., 0]), 'JPEG', quality=90)
  save('colour.png', Image.fromarray(colour), 'PNG')
  save('rgba.png', Image.fromarray(np.concatenate([colour, alpha], -1)), 'PNG')
  save('grey.png', Image.fromarray(grey[..., 0]), 'PNG')
  save('grey_alpha.png', Image.fromarray(np.concatenate([grey, alpha], -1), 'LA'), 'PNG')
  for name, array in (('grey16.png', rng.integers(0, 65536, [30, 20, 1], dtype=np.uint16)),
                      ('colour16.png', rng.integers(0, 65536, [30, 20, 3], dtype=np.uint16))):
    path = directory / name
    path.write_bytes(tf.io.encode_png(array).numpy())
    files[name] = str(path)
  palette = Image.fromarray(colour).quantize(16)
  save('palette.png', palette, 'PNG')
  save('first_frame.gif', palette, 'GIF', save_all=True,
       append_images=[Image.fromarray(255 - colour).quantize(16)])
  save('colour.bmp', Image.fromarray(colour), 'BMP')
  save('lossless.webp', Image.fromarray(colour), 'WEBP', lossless=True)
  return files


@pytest.fixture(scope='module')
def files(tmp_path_factory):
  return _files(tmp_path_factory.mktemp('images'))


@pytest.mark.parametrize('channels', [1, 3])
def test_pillow_pixels_are_the_libraries(files, channels):
  for name, path in files.items():
    expected = image_rules.to_channels(image_rules.decode(tf.io.read_file(path)),
                                       channels).numpy()
    got = pillow_images.read_image(path, channels)
    assert got.dtype == np.uint8 and got.shape == expected.shape, name
    np.testing.assert_array_equal(got, expected, err_msg=name)


def test_grayscale_is_tensorflows_on_every_colour_sample():
  rng = np.random.default_rng(1)
  rgb = rng.integers(0, 256, [50000, 3], dtype=np.uint8)
  np.testing.assert_array_equal(pillow_images.to_grayscale(rgb),
                                tf.image.rgb_to_grayscale(rgb[None]).numpy()[0])


def test_unreadable_and_animated_files_are_named(tmp_path):
  broken = tmp_path / 'broken.png'
  broken.write_text('not an image')
  with pytest.raises(errors.UserError, match='broken.png is not a readable image'):
    pillow_images.read_image(str(broken), 3)
  frames = [Image.fromarray(np.full([8, 8, 3], v, np.uint8)) for v in (0, 255)]
  frames[0].save(tmp_path / 'moving.webp', 'WEBP', save_all=True, append_images=frames[1:])
  with pytest.raises(errors.UserError, match='is an animated WebP'):
    pillow_images.read_image(str(tmp_path / 'moving.webp'), 3)
