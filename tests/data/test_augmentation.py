"""The training streams' augmentation (tf_ipmssl/data/augmentation.py): flips and
reflect-pad-crop translations against NumPy, labels and shapes kept, the draws a function of
(seed, stream, batch). Its settings and a run with it: tests/training/test_augmentation_run.py."""
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl.data import augmentation
from tf_ipmssl.data import pipelines
from tf_ipmssl.training import random_streams


def _numpy_augmented(images, flips, offsets, k):
  """The module doc's definition, written with NumPy's flip, reflect pad and slicing."""
  size_h, size_w = images.shape[1:3]
  out = []
  for image, flip, (oy, ox) in zip(images, flips, offsets):
    image = image[:, ::-1] if flip else image
    padded = np.pad(image, ((k, k), (k, k), (0, 0)), mode='reflect')
    out.append(padded[oy:oy + size_h, ox:ox + size_w])
  return np.stack(out)


def _images(batch=6, size=8, channels=3, seed=0):
  return np.random.default_rng(seed).uniform(-1, 1, (batch, size, size, channels)).astype(
      np.float32)


@pytest.mark.parametrize('k', [0, 1, 2, 3, 7])
def test_flip_and_translate_is_numpys_flip_reflect_pad_and_crop(k):
  images = _images()
  rng = np.random.default_rng(k)
  flips = np.array([False, True, False, True, True, False])
  offsets = rng.integers(0, 2 * k + 1, size=(6, 2)).astype(np.int32)
  offsets[0] = (0, 2 * k)  # The corners of the padded image.
  offsets[1] = (2 * k, 0)
  offsets[2] = (k, k)  # No shift: the image (flipped where asked).
  got = augmentation.flip_and_translate(tf.constant(images), tf.constant(flips),
                                        tf.constant(offsets), k).numpy()
  np.testing.assert_array_equal(got, _numpy_augmented(images, flips, offsets, k))
  np.testing.assert_array_equal(got[2], images[2])


def test_non_square_images_and_integer_pixels():
  images = np.arange(2 * 5 * 7 * 1, dtype=np.uint8).reshape(2, 5, 7, 1)
  flips, offsets = np.array([True, False]), np.array([[0, 4], [3, 1]], np.int32)
  got = augmentation.flip_and_translate(tf.constant(images), tf.constant(flips),
                                        tf.constant(offsets), 2).numpy()
  np.testing.assert_array_equal(got, _numpy_augmented(images, flips, offsets, 2))


def test_the_draws_are_the_documented_function_of_the_seed():
  seed = random_streams.stream_seed(3, random_streams.AUGMENTATION['labeled'], 11)
  aug = augmentation.Augmentation(flip=True, translate=2)
  flips, offsets = aug.draw(64, seed)
  u = tf.random.stateless_uniform([64, 3], seed=seed, alg='philox').numpy()
  np.testing.assert_array_equal(flips.numpy(), u[:, 0] < 0.5)
  np.testing.assert_array_equal(offsets.numpy(), np.floor(u[:, 1:] * 5).astype(np.int32))
  # Both flips and every offset in [0, 2k] occur in a batch of 64.
  assert 0 < flips.numpy().sum() < 64
  assert set(offsets.numpy().ravel()) == set(range(5))
  # The flip draw does not depend on k, nor the offsets on the flip.
  np.testing.assert_array_equal(augmentation.Augmentation(True, 5).draw(64, seed)[0], flips)
  np.testing.assert_array_equal(augmentation.Augmentation(False, 2).draw(64, seed)[1], offsets)
  assert not augmentation.Augmentation(False, 2).draw(64, seed)[0].numpy().any()


def test_augmenting_is_numpys_augmentation_of_the_draws():
  images = _images(batch=16, size=32, channels=1)
  aug = augmentation.Augmentation(flip=True, translate=2)
  seed = random_streams.stream_seed(0, random_streams.AUGMENTATION['unlabeled'], 5)
  flips, offsets = aug.draw(16, seed)
  np.testing.assert_array_equal(
      aug(tf.constant(images), seed).numpy(),
      _numpy_augmented(images, flips.numpy(), offsets.numpy(), 2))


def test_off_passes_the_batch_through():
  x = tf.constant(_images())
  off = augmentation.Augmentation()
  assert not off.active and off.describe() == 'none'
  assert off(x, [0, 0]) is x


def _stream(augment, start_step=0, labels=True, seed=4):
  images = np.random.default_rng(1).integers(0, 256, (40, 28, 28, 1), dtype=np.uint8)
  return pipelines.training_stream(
      images, np.arange(40) if labels else None, batch_size=8, seed=seed,
      start_step=start_step, augment=augment)


def _augment(aug, run_seed=7, stream='labeled'):
  return lambda x, t: aug(x, random_streams.stream_seed(
      run_seed, random_streams.AUGMENTATION[stream], t))


def _take(dataset, n):
  return [tf.nest.map_structure(lambda t: t.numpy(), b) for b in dataset.take(n)]


def test_streams_keep_labels_and_shapes_and_each_batch_is_a_function_of_its_number():
  aug = augmentation.Augmentation(flip=True, translate=3)
  plain = _take(_stream(None), 6)
  augmented = _take(_stream(_augment(aug)), 6)
  again = _take(_stream(_augment(aug)), 6)
  resumed = _take(_stream(_augment(aug), start_step=2), 4)
  for t, ((x, y), (ax, ay)) in enumerate(zip(plain, augmented)):
    assert ax.shape == x.shape == (8, 32, 32, 1) and ax.dtype == np.float32
    np.testing.assert_array_equal(ay, y)  # The labels of the same examples, in order.
    assert not np.array_equal(ax, x)
    # Each example is its own image flipped and translated as the draws say.
    seed = random_streams.stream_seed(7, random_streams.AUGMENTATION['labeled'], t)
    flips, offsets = aug.draw(8, seed)
    np.testing.assert_array_equal(ax, _numpy_augmented(x, flips.numpy(), offsets.numpy(), 3))
    np.testing.assert_array_equal(ax, again[t][0])  # Deterministic for (seed, batch).
    if t >= 2:  # A stream restarted at batch 2 (a resume) yields the same batches.
      np.testing.assert_array_equal(ax, resumed[t - 2][0])
      np.testing.assert_array_equal(ay, resumed[t - 2][1])
  # Different batches draw differently; so do other run seeds and the other stream.
  draws = [np.concatenate([a.numpy().ravel() for a in aug.draw(
      8, random_streams.stream_seed(7, random_streams.AUGMENTATION['labeled'], t))])
           for t in range(6)]
  assert len({d.tobytes() for d in draws}) == 6
  other_seed = _take(_stream(_augment(aug, run_seed=8)), 1)[0][0]
  other_stream = _take(_stream(_augment(aug, stream='unlabeled')), 1)[0][0]
  assert not np.array_equal(other_seed, augmented[0][0])
  assert not np.array_equal(other_stream, augmented[0][0])
  # An unlabeled stream yields the augmented images alone.
  unlabeled = _take(_stream(_augment(aug), labels=False), 1)[0]
  np.testing.assert_array_equal(unlabeled, augmented[0][0])
