"""Label-preserving augmentation of the training batches: off by default (the paper uses none).

Each training stream, the labeled and the unlabeled, has its own augmentation
(`augmentation.*` in gin: `labeled_flip`, `labeled_translate`, `unlabeled_flip`,
`unlabeled_translate`; docs/algorithm.md#augmentation). For a batch x of model inputs
(float32 [B, S, S, C], after pipelines.to_model_input: Fashion-MNIST's 28x28 already padded
into 32x32) and the k of `translate`, example b is

  1. mirrored left to right when `flip` and u_b0 < 1/2,
  2. reflect-padded by k pixels on every side (the border pixel itself is not repeated:
     tf.pad's and np.pad's 'reflect') and cropped back to S x S at the offset
     (o_y, o_x) = (⌊(2k + 1) u_b1⌋, ⌊(2k + 1) u_b2⌋) in [0, 2k]², i.e. shifted by o − k,

  y[b, r, c] = x'[b, ρ(r + o_y − k), ρ(c + o_x − k)],  ρ(j) = |j| for j < S, 2(S − 1) − j
  above,

with x' the flipped image and u_b = (u_b0, u_b1, u_b2) ~ U[0, 1)³ drawn statelessly (Philox)
from a seed [2]. The trainer derives that seed from the run's seed, the stream and the
batch's number (random_streams.stream_seed), so a batch is augmented the same in every
session of a run and a resumed run stays bit-identical to an uninterrupted one. Pixels are
only moved, never recomputed, so the values are exactly the input's; labels are untouched.
A flip draw does not depend on k, nor the offsets on `flip`.
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl import builder_settings
from tf_ipmssl import errors

# The streams, in the order the settings name them.
STREAMS = ('labeled', 'unlabeled')


@dataclasses.dataclass(frozen=True)
class Augmentation:
  """One stream's augmentation: a random left-right flip and a random translation by up to
  `translate` pixels (reflect-pad and crop), see the module doc."""
  flip: bool = False
  translate: int = 0

  @property
  def active(self) -> bool:
    """Whether it changes anything (off: the batches are passed through untouched)."""
    return self.flip or self.translate > 0

  def describe(self) -> str:
    """'flip + translate 2', 'flip', 'translate 2' or 'none'."""
    parts = (['flip'] if self.flip else []) + (
        [f'translate {self.translate}'] if self.translate else [])
    return ' + '.join(parts) or 'none'

  def draw(self, batch_size, seed):
    """The random choices for a batch: (flips bool [B], offsets int32 [B, 2] in [0, 2k]).

    Args:
      batch_size: B (the global batch: every replica draws the same numbers).
      seed: int [2], a stateless seed.
    """
    u = tf.random.stateless_uniform([batch_size, 3], seed=seed, alg='philox')
    flips = tf.logical_and(tf.constant(self.flip), u[:, 0] < 0.5)
    offsets = tf.cast(tf.floor(u[:, 1:] * (2 * self.translate + 1)), tf.int32)
    return flips, tf.minimum(offsets, 2 * self.translate)

  def __call__(self, images, seed):
    """The augmented batch of `images` (float [B, S, S, C]) for stateless seed `seed` [2];
    `images` itself when the augmentation is off."""
    if not self.active:
      return images
    flips, offsets = self.draw(tf.shape(images)[0], seed)
    return flip_and_translate(images, flips, offsets, self.translate)


def flip_and_translate(images, flips, offsets, translate):
  """`images` [B, H, W, C] with example b mirrored left to right where flips[b], then
  reflect-padded by `translate` pixels and cropped back at offsets[b] = (o_y, o_x) (each in
  [0, 2 translate]): the module doc's formula, as two gathers.

  Args:
    images: [B, H, W, C], any dtype; translate < H, W.
    flips: bool [B].
    offsets: int32 [B, 2].
    translate: k, a Python int.
  """
  height, width = images.shape[1], images.shape[2]

  def reflected(size, offset):  # [B, size]: the source index of each output row / column.
    j = tf.range(size, dtype=tf.int32)[tf.newaxis, :] + offset[:, tf.newaxis] - translate
    j = tf.abs(j)
    return tf.where(j > size - 1, 2 * (size - 1) - j, j)

  rows = reflected(height, offsets[:, 0])
  columns = reflected(width, offsets[:, 1])
  columns = tf.where(flips[:, tf.newaxis], width - 1 - columns, columns)
  images = tf.gather(images, rows, axis=1, batch_dims=1)
  return tf.gather(images, columns, axis=2, batch_dims=1)


@dataclasses.dataclass(frozen=True)
class Augmentations:
  """The training streams' augmentation settings, `augmentation.*` in gin (off by
  default; module doc)."""
  # A random left-right flip of the labeled stream's images.
  labeled_flip: bool = False
  # A random translation of the labeled stream's images by up to this many pixels.
  labeled_translate: int = 0
  # Likewise for the unlabeled stream.
  unlabeled_flip: bool = False
  unlabeled_translate: int = 0

  def __post_init__(self):
    """A ConfigError for a flip that is not a bool or a translation that is not a
    non-negative integer."""
    for stream in STREAMS:
      flip = getattr(self, f'{stream}_flip')
      if not isinstance(flip, bool):
        raise errors.ConfigError(f'augmentation.{stream}_flip must be True or False, got '
                                 f'{flip!r}')
      errors.check_number(f'augmentation.{stream}_translate',
                          getattr(self, f'{stream}_translate'), integer=True, low=0)


def per_stream(settings: Augmentations) -> dict:
  """The augmentation of each stream ({'labeled': Augmentation, 'unlabeled': ...}) of
  `settings`."""
  return {stream: Augmentation(getattr(settings, f'{stream}_flip'),
                               getattr(settings, f'{stream}_translate'))
          for stream in STREAMS}


def describe(streams: dict) -> str:
  """The augmented streams of `streams` (per_stream's), e.g. 'labeled flip + translate 2;
  unlabeled flip', or 'none'."""
  return '; '.join(f'{stream} {augmentation.describe()}'
                   for stream, augmentation in streams.items() if augmentation.active) or 'none'


def check(streams: dict, image_size: int, reads) -> None:
  """ConfigErrors for augmentations `streams` (per_stream's) that a run reading the streams
  `reads` at input size `image_size` cannot apply: a translation of a whole image or more,
  or an augmentation of a stream the run does not read."""
  for stream, augmentation in streams.items():
    if augmentation.translate >= image_size:
      raise errors.ConfigError(
          f'augmentation.{stream}_translate = {augmentation.translate} reflects more than the '
          f'{image_size}x{image_size} image holds; choose at most {image_size - 1} (a few '
          'pixels is usual)')
    if augmentation.active and stream not in reads:
      raise errors.ConfigError(
          f'augmentation.{stream}_* is bound but this algorithm reads no {stream} stream '
          f'(it reads {", ".join(reads)}); leave it unbound')


# augmentation.* in gin: its settings, read into the run configuration (run_config.py).
GROUP = builder_settings.Group.of_dataclass('augmentation', Augmentations)
