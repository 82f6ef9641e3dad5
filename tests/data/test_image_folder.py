"""The image-folder dataset on tiny generated folders: its layout, formats, resize rule and
channels, symbolic links, and every bad input refused in one line (in-process, and through
bin/train before anything is written)."""
import io
import os

import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from tests.training import runs
from tf_ipmssl import errors
from tf_ipmssl.data import image_folder
from tf_ipmssl.data import image_rules
from tf_ipmssl.data import ssl_data


def write_image(path, array):
  """Writes uint8 [H, W, C] (C = 1 to 4) in the format of the path's extension."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  array = np.asarray(array, np.uint8)
  if path.endswith('.png'):
    tf.io.write_file(path, tf.io.encode_png(array))
  elif path.endswith('.jpg'):
    tf.io.write_file(path, tf.io.encode_jpeg(array, quality=100))
  else:  # BMP, GIF, WebP: TensorFlow has no encoder.
    options = {'lossless': True} if path.endswith('.webp') else {}
    Image.fromarray(array[..., 0] if array.shape[-1] == 1 else array).save(path, **options)
  return path


def animated_webp(values, alpha=False):
  """The bytes of an animated WebP of 6x6 constant frames, one per value."""
  frames = [Image.fromarray(constant(6, 6, [v, v, v] + [255] * alpha)) for v in values]
  buffer = io.BytesIO()
  frames[0].save(buffer, format='WEBP', save_all=True, append_images=frames[1:], lossless=True)
  return buffer.getvalue()


def constant(height, width, value):
  return np.broadcast_to(np.asarray(value, np.uint8), [height, width, np.size(value)])


def make_folder(root, validation=False, test=True):
  """3 classes (given out of order), unlabeled images at depth 2, a hidden file: grayscale."""
  for name, value in (('zebra', 200), ('ant', 20), ('moth', 120)):
    for i in range(2):
      write_image(str(root / 'labeled' / name / f'{i}.png'), constant(40 + i, 36, [value]))
    if test:
      write_image(str(root / 'test' / name / 'a.png'), constant(32, 32, [value]))
  if validation:
    write_image(str(root / 'validation' / 'moth' / 'v.png'), constant(50, 40, [120]))
  for i in range(3):
    write_image(str(root / 'unlabeled' / 'deep' / 'er' / f'{i}.png'), constant(33, 90, [i]))
  (root / 'unlabeled' / '.DS_Store').write_text('not an image')
  return str(root)


def read(root, channels=None):
  return ssl_data.build_ssl_data(ssl_data.BuildSslData('image_folder', data_dir=str(root),
                                                       num_labeled=None, validation_size=0,
                                                       channels=channels))


def test_layout_classes_labels_and_unlabeled(tmp_path):
  data = read(make_folder(tmp_path, validation=True))
  assert data.class_names == ('ant', 'moth', 'zebra') and data.num_classes == 3
  assert data.image_shape == (32, 32, 1)
  np.testing.assert_array_equal(data.labeled_labels, [0, 0, 1, 1, 2, 2])
  # Constant images stay constant whatever their size: each label's value.
  np.testing.assert_array_equal(data.labeled_images[:, 5, 5, 0], [20, 20, 120, 120, 200, 200])
  np.testing.assert_array_equal(data.test_labels, [0, 1, 2])
  np.testing.assert_array_equal(data.test_images[:, 0, 0, 0], [20, 120, 200])
  np.testing.assert_array_equal(data.validation_labels, [1])
  # The labeled images count as unlabeled, then the 3 of unlabeled/ (any depth; hidden skipped).
  assert len(data.unlabeled_images) == 6 + 3
  np.testing.assert_array_equal(data.unlabeled_images[:6], data.labeled_images)
  np.testing.assert_array_equal(data.unlabeled_images[6:, 0, 0, 0], [0, 1, 2])
  assert data.num_labeled is None and data.resizes_images
  assert data.source == f'image_folder:{tmp_path}'


def test_without_validation_and_test_folders(tmp_path):
  data = read(make_folder(tmp_path, test=False))
  assert len(data.validation_labels) == 0 and len(data.test_labels) == 0


def test_formats_png_jpeg_bmp_gif_webp(tmp_path):
  colours = {'png': (255, 0, 0), 'jpg': (0, 0, 255), 'bmp': (0, 255, 0), 'gif': (255, 255, 0),
             'webp': (0, 255, 255)}
  for extension, colour in colours.items():
    write_image(str(tmp_path / 'labeled' / extension / f'x.{extension}'), constant(32, 32, colour))
  (tmp_path / 'unlabeled').mkdir()
  data = read(tmp_path)
  assert data.class_names == ('bmp', 'gif', 'jpg', 'png', 'webp')
  for image, name in zip(data.labeled_images, data.class_names):
    np.testing.assert_allclose(image[16, 16].astype(int), colours[name], atol=2)


@pytest.mark.parametrize('size, slope', [(64, 8), (96, 6)])
def test_upscaling_keeps_a_ramp_linear(size, slope):
  """28x28 (Fashion-MNIST's size) up to 64 and 96, as build_ssl_data.image_size does: bilinear
  interpolation with half-pixel centres keeps a ramp (value slope * column) linear inside the
  image, so output column j holds slope * u, u = (j + 0.5) * 28 / size - 0.5 the source
  column (the slopes make slope * u an odd multiple of 1/4 or 1/8: no rounding tie)."""
  ramp = np.tile((slope * np.arange(28)).astype(np.uint8), (28, 1))[..., None]
  fitted = image_rules.fit_images(ramp, size).numpy()[..., 0]
  assert fitted.shape == (size, size)
  u = (np.arange(size) + 0.5) * 28 / size - 0.5
  inside = (u >= 0) & (u <= 27)
  assert inside.sum() > size - 6  # Only the border columns are left out.
  expected = np.floor(slope * u[inside] + 0.5).astype(int)
  np.testing.assert_array_equal(fitted[:, inside], np.tile(expected, (size, 1)))
  # Outside, the border column's value (clamped, not extrapolated).
  np.testing.assert_array_equal(fitted[:, u < 0], 0)
  np.testing.assert_array_equal(fitted[:, u > 27], slope * 27)


def test_resize_rule_known_answers():
  # A ramp (value 2 * column) downscaled by 2: the antialiased bilinear filter keeps a linear
  # function away from the borders, so output column j holds 2 * (2j + 0.5) = 4j + 1.
  ramp = np.broadcast_to(2 * np.arange(64, dtype=np.uint8)[None, :, None], [64, 64, 1])
  fitted = image_rules.fit_images(ramp).numpy()
  assert fitted.shape == (32, 32, 1)
  np.testing.assert_array_equal(fitted[:, 1:31, 0], np.broadcast_to(4 * np.arange(1, 31) + 1,
                                                                    (32, 30)))
  # A wide 64x128 image: short side to 32 (32x64), then the centre 32 columns (16..47).
  wide = np.broadcast_to(2 * np.arange(128, dtype=np.uint8)[None, :, None], [64, 128, 1])
  np.testing.assert_array_equal(image_rules.fit_images(wide).numpy()[:, :, 0],
                                np.broadcast_to(4 * np.arange(16, 48) + 1, (32, 32)))
  # 32x32 passes unchanged; a tall 50x32 image loses 9 rows above and 9 below.
  rng = np.random.default_rng(0)
  square = rng.integers(0, 256, [2, 32, 32, 3], dtype=np.uint8)
  np.testing.assert_array_equal(image_rules.fit_images(square).numpy(), square)
  tall = rng.integers(0, 256, [50, 32, 3], dtype=np.uint8)
  np.testing.assert_array_equal(image_rules.fit_images(tall).numpy(), tall[9:41])


def test_channels_from_the_images(tmp_path):
  make_folder(tmp_path)
  assert read(tmp_path).image_shape == (32, 32, 1)
  write_image(str(tmp_path / 'unlabeled' / 'colour.png'), constant(32, 32, (10, 20, 30)))
  data = read(tmp_path)
  assert data.image_shape == (32, 32, 3)
  # Grayscale images repeated into three channels; the colour one as it is.
  np.testing.assert_array_equal(data.labeled_images[0, 0, 0], [20, 20, 20])
  np.testing.assert_array_equal(data.unlabeled_images[6, 0, 0], [10, 20, 30])  # Sorted first.


def refused(root, *fragments, channels=None, error=errors.UserError):
  with pytest.raises(error) as raised:
    read(root, channels=channels)
  message = str(raised.value)
  assert '\n' not in message
  for fragment in fragments:
    assert fragment in message, (fragment, message)
  return message


def test_missing_labeled_or_unlabeled(tmp_path):
  make_folder(tmp_path)
  os.rename(tmp_path / 'unlabeled', tmp_path / 'elsewhere')
  refused(tmp_path, f'{tmp_path} has no unlabeled/ folder')
  os.rename(tmp_path / 'labeled', tmp_path / 'labels')
  refused(tmp_path, f'{tmp_path} has no labeled/ folder', 'labeled/<class name>/')
  refused(tmp_path / 'nowhere', 'does not exist')


def test_class_with_no_image(tmp_path):
  make_folder(tmp_path)
  (tmp_path / 'labeled' / 'empty' / 'sub').mkdir(parents=True)
  refused(tmp_path, f'{tmp_path / "labeled" / "empty"} holds no image')


def test_one_class_or_loose_files(tmp_path):
  write_image(str(tmp_path / 'labeled' / 'only' / 'a.png'), constant(8, 8, [1]))
  (tmp_path / 'unlabeled').mkdir()
  refused(tmp_path, 'holds 1 class folder(s)', 'at least two')
  write_image(str(tmp_path / 'labeled' / 'stray.png'), constant(8, 8, [1]))
  refused(tmp_path, 'stray.png lies directly in labeled/')


def test_unreadable_files_named_with_how_many_more(tmp_path):
  make_folder(tmp_path)
  for name in ('a_broken.png', 'b_broken.jpg', 'c_broken.gif'):
    (tmp_path / 'unlabeled' / name).write_bytes(b'not an image')
  refused(tmp_path, f'{tmp_path / "unlabeled" / "a_broken.png"} (and 2 more) is not a readable '
          'PNG, JPEG, BMP, GIF or WebP image')


def test_file_of_another_format(tmp_path):
  make_folder(tmp_path)
  (tmp_path / 'labeled' / 'ant' / 'notes.txt').write_text('hello')
  refused(tmp_path, f'{tmp_path / "labeled" / "ant" / "notes.txt"} is not a PNG, JPEG, BMP, GIF '
          'or WebP image')


@pytest.mark.parametrize('folder', ['test', 'validation'])
def test_class_not_among_the_labeled(tmp_path, folder):
  make_folder(tmp_path)
  write_image(str(tmp_path / folder / 'beetle' / 'x.png'), constant(8, 8, [1]))
  refused(tmp_path, f'{tmp_path / folder / "beetle"} is a class that', 'ant, moth, zebra')


def test_mixed_channel_counts_when_bound(tmp_path):
  make_folder(tmp_path)
  refused(tmp_path, 'build_ssl_data.channels must be', channels=2, error=errors.ConfigError)
  write_image(str(tmp_path / 'unlabeled' / 'colour.png'), constant(32, 32, (10, 20, 30)))
  refused(tmp_path, f'{tmp_path / "unlabeled" / "colour.png"} is colour, but '
          'build_ssl_data.channels = 1', 'leave build_ssl_data.channels unbound', channels=1)
  refused(tmp_path, f'{tmp_path / "labeled" / "ant" / "0.png"} (and 11 more) is grayscale, '
          'but build_ssl_data.channels = 3', channels=3)


def test_folder_too_large_for_memory(tmp_path, monkeypatch):
  make_folder(tmp_path)
  # 12 images, 32x32x3 bytes each when the channels are not yet known: 36,864 bytes (36 KiB).
  monkeypatch.setattr(image_folder, 'available_memory_bytes', lambda: 4 * 9 * 1024)
  refused(tmp_path, 'holds 12 images, 36.0 KiB decoded at 32x32x3, more than the 9.0 KiB '
          'limit (a quarter of the 36.0 KiB of available memory')
  monkeypatch.setattr(image_folder, 'available_memory_bytes', lambda: 4 * 36864)
  read(tmp_path)  # The limit is a quarter of the available memory: exactly enough.
  monkeypatch.setattr(image_folder, 'available_memory_bytes', lambda: 4 * 36864 - 4)
  refused(tmp_path, 'holds 12 images')
  # Channels bound to 1: a third of the size.
  monkeypatch.setattr(image_folder, 'available_memory_bytes', lambda: 4 * 12288)
  read(tmp_path, channels=1)


def test_settings_that_do_not_apply(tmp_path):
  make_folder(tmp_path)
  for settings in ({'num_labeled': 6}, {'validation_size': 2}):
    with pytest.raises(errors.ConfigError, match='build_ssl_data.num_labeled = None'):
      ssl_data.build_ssl_data(ssl_data.BuildSslData(
          'image_folder', data_dir=str(tmp_path),
          **{'num_labeled': None, 'validation_size': 0, **settings}))
  with pytest.raises(errors.ConfigError, match='max_train_examples does not apply'):
    ssl_data.build_ssl_data(ssl_data.BuildSslData('image_folder', data_dir=str(tmp_path),
                                                  num_labeled=None, validation_size=0,
                                                  max_train_examples=4))
  with pytest.raises(errors.ConfigError, match='channels applies to image folders only'):
    ssl_data.build_ssl_data(ssl_data.BuildSslData('fashion_mnist', channels=1))
  with pytest.raises(errors.ConfigError, match='image_folder'):
    ssl_data.build_ssl_data(ssl_data.BuildSslData('image_folders'))


@pytest.mark.parametrize('damage', ['unreadable', 'no_labeled'])
def test_bin_train_refuses_before_writing(tmp_path, damage):
  root = tmp_path / 'images'
  make_folder(root)
  if damage == 'unreadable':
    (root / 'unlabeled' / 'broken.png').write_bytes(b'xx')
    fragment = f'{root / "unlabeled" / "broken.png"} is not a readable'
  else:
    os.rename(root / 'labeled', root / 'labels')
    fragment = 'has no labeled/ folder'
  model_dir = tmp_path / 'run'
  result = runs.run_train(str(model_dir), runs.tiny_bindings(
      root, dataset='image_folder', **{'build_ssl_data.num_labeled': None,
                                       'build_ssl_data.validation_size': 0,
                                       'build_ssl_data.source': "'auto'"}))
  assert result.returncode == 1, result.stdout + result.stderr
  assert 'Traceback' not in result.stderr
  lines = [line for line in result.stderr.splitlines() if line.startswith('error: ')]
  assert len(lines) == 1 and fragment in lines[0], result.stderr
  assert not model_dir.exists()


def test_alpha_channels_are_dropped(tmp_path):
  write_image(str(tmp_path / 'labeled' / 'a' / 'ga.png'), constant(32, 32, (70, 9)))
  write_image(str(tmp_path / 'labeled' / 'b' / 'ga.png'), constant(32, 32, (90, 9)))
  (tmp_path / 'unlabeled').mkdir()
  data = read(tmp_path)  # Grayscale with alpha: grayscale.
  assert data.image_shape == (32, 32, 1)
  np.testing.assert_array_equal(data.labeled_images[:, 0, 0, 0], [70, 90])
  write_image(str(tmp_path / 'unlabeled' / 'rgba.png'), constant(32, 32, (1, 2, 3, 4)))
  data = read(tmp_path)  # Colour with alpha: colour.
  assert data.image_shape == (32, 32, 3)
  np.testing.assert_array_equal(data.unlabeled_images[:, 0, 0], [[70] * 3, [90] * 3, [1, 2, 3]])


def test_animated_webp_refused_before_tensorflow_decodes_it(tmp_path):
  # TensorFlow's WebP decoder writes past its buffer on an animated WebP without alpha (and
  # the process dies): decode refuses every animated WebP, whatever the file's name.
  for alpha in (False, True):
    with pytest.raises(tf.errors.InvalidArgumentError, match='an animated WebP'):
      image_rules.decode(animated_webp([10, 200], alpha=alpha))
  still = io.BytesIO()
  Image.fromarray(constant(6, 6, (1, 2, 3))).save(still, format='WEBP', lossless=True)
  np.testing.assert_array_equal(image_rules.decode(still.getvalue())[0, 0], [1, 2, 3])
  make_folder(tmp_path)
  (tmp_path / 'unlabeled' / 'moving.webp').write_bytes(animated_webp([10, 200]))
  (tmp_path / 'unlabeled' / 'named_png.png').write_bytes(animated_webp([30, 40]))
  refused(tmp_path, f'{tmp_path / "unlabeled" / "moving.webp"} (and 1 more) is an animated '
          'WebP, which TensorFlow cannot decode safely; save its first frame as a still image')


def _values(images):
  return list(images[:, 0, 0, 0])


def test_link_loops_are_not_followed(tmp_path):
  make_folder(tmp_path, validation=True)
  expected = read(tmp_path)
  os.symlink('..', tmp_path / 'labeled' / 'ant' / 'up')  # labeled/, which holds the link.
  os.symlink('../..', tmp_path / 'labeled' / 'moth' / 'top')  # The image folder itself.
  os.symlink('.', tmp_path / 'unlabeled' / 'deep' / 'er' / 'here')
  os.symlink('../..', tmp_path / 'unlabeled' / 'deep' / 'er' / 'back')  # unlabeled/
  os.symlink('../moth', tmp_path / 'validation' / 'moth' / 'itself')
  assert image_folder.list_files(str(tmp_path / 'labeled' / 'ant')) == [
      str(tmp_path / 'labeled' / 'ant' / f'{i}.png') for i in range(2)]
  data = read(tmp_path)
  for name in ('labeled_images', 'labeled_labels', 'unlabeled_images', 'validation_images',
               'validation_labels', 'test_images', 'test_labels'):
    np.testing.assert_array_equal(getattr(data, name), getattr(expected, name), err_msg=name)


def test_folder_reached_twice_through_links_is_read_once(tmp_path):
  root = tmp_path / 'images'
  make_folder(root)
  elsewhere = tmp_path / 'elsewhere'
  for i in range(2):
    write_image(str(elsewhere / f'e{i}.png'), constant(8, 8, [50 + i]))
  for name in ('a', 'b'):
    os.symlink(elsewhere, root / 'unlabeled' / name)
  os.symlink(elsewhere / 'e1.png', root / 'unlabeled' / 'c.png')
  unlabeled = root / 'unlabeled'
  # Each real file at the first path the walk reaches it by: through a/.
  assert image_folder.list_files(str(unlabeled)) == [
      str(unlabeled / 'a' / 'e0.png'), str(unlabeled / 'a' / 'e1.png'),
      *(str(unlabeled / 'deep' / 'er' / f'{i}.png') for i in range(3))]
  data = read(root)
  assert _values(data.unlabeled_images[6:]) == [50, 51, 0, 1, 2]


def test_one_file_in_two_folders_through_a_link(tmp_path):
  make_folder(tmp_path)
  os.symlink('../labeled', tmp_path / 'unlabeled' / 'all')
  refused(tmp_path, f'{tmp_path / "unlabeled" / "all" / "ant" / "0.png"} is the same file '
          f'as {tmp_path / "labeled" / "ant" / "0.png"} (through a symbolic link)',
          'remove the link')
  os.remove(tmp_path / 'unlabeled' / 'all')
  os.symlink('../zebra/1.png', tmp_path / 'labeled' / 'moth' / 'z.png')
  refused(tmp_path, f'{tmp_path / "labeled" / "zebra" / "1.png"} is the same file as '
          f'{tmp_path / "labeled" / "moth" / "z.png"}')


def _pillow(data):
  return Image.open(io.BytesIO(data))


@pytest.mark.parametrize('mode,subsampling', [('RGB', 0), ('RGB', 2), ('L', 0)])
def test_jpeg_pixels_are_pillows(mode, subsampling):
  """One decoding everywhere (image_rules.decode, which training and bin/predict use): a
  JPEG's pixels equal Pillow's (libjpeg's accurate IDCT), where TensorFlow's default fast IDCT
  differs in about a third of them."""
  rng = np.random.default_rng(subsampling)
  smooth = tf.image.resize(rng.integers(0, 256, [10, 12, 3]).astype(np.float32), [80, 96])
  image = np.clip(smooth.numpy(), 0, 255).astype(np.uint8)
  if mode == 'L':
    image = image[..., 0]
  buffer = io.BytesIO()
  Image.fromarray(image, mode).save(buffer, 'JPEG', quality=85, subsampling=subsampling)
  data = buffer.getvalue()
  ours = image_rules.decode(tf.constant(data)).numpy()
  pillow = np.asarray(_pillow(data))
  np.testing.assert_array_equal(ours.reshape(pillow.shape), pillow)
  assert ours.shape[-1] == (3 if mode == 'RGB' else 1)
  fast = tf.io.decode_jpeg(data).numpy().reshape(pillow.shape)
  assert (fast != pillow).mean() > 0.1  # The rule is not TensorFlow's default.


def test_the_documented_rule_for_16_bit_palette_gif_and_alpha():
  """image_rules.DECODING_RULE, checked: a 16-bit PNG by its high byte, a palette PNG
  expanded to its colours, a GIF's first frame in RGB, alpha dropped (not composited), and
  colour to grayscale by the stated weights, rounded."""
  sixteen = np.array([[0, 255, 256, 257, 32767, 65535]], np.uint16)[..., None]
  decoded = image_rules.decode(tf.io.encode_png(sixteen)).numpy()
  np.testing.assert_array_equal(decoded[..., 0], sixteen[..., 0] >> 8)
  rng = np.random.default_rng(0)
  indices = rng.integers(0, 4, [6, 5], dtype=np.uint8)
  palette = [10, 20, 30, 200, 100, 0, 0, 0, 255, 90, 90, 90]
  picture = Image.fromarray(indices, 'P')
  picture.putpalette(palette + [0] * (768 - len(palette)))
  colours = np.array(palette, np.uint8).reshape(4, 3)
  for fmt in ('PNG', 'GIF'):
    buffer = io.BytesIO()
    picture.save(buffer, fmt)
    decoded = image_rules.decode(tf.constant(buffer.getvalue())).numpy()
    np.testing.assert_array_equal(decoded[..., :3], colours[indices], err_msg=fmt)
  rgba = np.concatenate([colours[indices], np.full([6, 5, 1], 7, np.uint8)], axis=-1)
  decoded = image_rules.to_channels(image_rules.decode(tf.io.encode_png(rgba)), 3).numpy()
  np.testing.assert_array_equal(decoded, colours[indices])  # Alpha 7 dropped, not blended.
  # Grayscale by docs/serving.md's float32 formula, on every value a channel can take.
  rgb = rng.integers(0, 256, [20000, 3], dtype=np.uint8)
  grey = image_rules.to_channels(tf.constant(rgb[None]), 1).numpy()[0, :, 0]
  weights = np.array([0.2989, 0.5870, 0.1140], np.float32)
  expected = np.floor((rgb.astype(np.float32) * np.float32(1 / 255)) @ weights
                      * np.float32(255.5))
  np.testing.assert_array_equal(grey, expected.astype(np.uint8))
  assert 'v >> 8' in image_rules.DECODING_RULE and '0.2989 r' in image_rules.DECODING_RULE


def _damaged_jpeg():
  """A JPEG cut in half: libjpeg and TensorFlow's decoder write their own lines about it."""
  image = np.random.default_rng(0).integers(0, 256, [28, 28, 1], dtype=np.uint8)
  data = tf.io.encode_jpeg(image).numpy()
  return data[:len(data) // 2]


def test_a_damaged_jpeg_is_named_without_the_decoders_lines(tmp_path, capfd):
  make_folder(tmp_path)
  (tmp_path / 'unlabeled' / 'half.jpg').write_bytes(_damaged_jpeg())
  capfd.readouterr()
  refused(tmp_path, f'{tmp_path / "unlabeled" / "half.jpg"} is not a readable PNG, JPEG, BMP, '
          'GIF or WebP image')
  err = capfd.readouterr().err
  assert 'Premature end of JPEG' not in err and 'Input file read error' not in err, err
