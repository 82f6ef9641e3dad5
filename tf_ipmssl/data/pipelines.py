"""tf.data input pipelines: model-ready batches from uint8 images held in memory.

Training batches are a pure function of (seed, step), so that a run resumed from a
checkpoint at step t sees exactly the batches it would have seen without the restart.
The stream of example indices is the infinite concatenation of per-epoch permutations,
epoch e's permutation given by the stateless `index_shuffle` seeded by (seed, e), cut
into consecutive batches of `batch_size` indices:

  position p = step * batch_size + i,  epoch e = p // N,
  index = index_shuffle(p mod N, seed=[seed, e], max_index=N - 1).

Each batch is computed from its step alone, so starting at step t costs nothing, a
labeled set smaller than a batch (10 labels, batch 64) is cycled through several epochs
per batch, and every epoch of a larger set visits each example exactly once, epochs
running on across batch boundaries when N is not a multiple of the batch size.
"""
import numpy as np
import tensorflow as tf

from tf_ipmssl.data import dataset_specs

# The paper's input size, into which smaller images (Fashion-MNIST's 28x28) are padded.
MODEL_IMAGE_SIZE = 32

# The constant that `tf.random.experimental.index_shuffle` prepends to a [2] seed to
# form the raw op's [3] seed. We call the raw op with one seed per index (the public
# wrapper pads batched seeds along the wrong axis), keeping the wrapper's convention so
# that our permutation of epoch e equals `index_shuffle(i, [seed, e], N - 1)`.
_INDEX_SHUFFLE_SEED_PAD = 498247692
_INDEX_SHUFFLE_ROUNDS = 4


def to_model_input(images) -> tf.Tensor:
  """Maps uint8 images [B, H, W, C] to the critic's input: float32 [B, S, S, C].

  Pixels are scaled to [-1, 1] as x / 127.5 - 1; images smaller than 32x32 (Fashion-MNIST's
  28x28) are centred in 32x32 and padded with -1, i.e. the value of a black pixel
  (docs/algorithm.md#networks). Images of an input size of the networks (S x S, S in
  dataset_specs.IMAGE_SIZES: 32, 64, 96) pass through. Works inside tf.function, including
  the exported serving function; H and W must be known statically.

  Args:
    images: uint8 [B, H, W, C], S x S or with H, W <= 32 and 32 - H, 32 - W even.

  Returns:
    float32 [B, S, S, C] (S = 32 for the smaller images).
  """
  images = tf.convert_to_tensor(images)
  if images.dtype != tf.uint8:
    raise TypeError(f'to_model_input expects uint8 images, got {images.dtype.name}')
  height, width = images.shape[1], images.shape[2]
  if height is None or width is None:
    raise ValueError(f'image height and width must be static, got shape {images.shape}')
  x = tf.cast(images, tf.float32) / 127.5 - 1.0
  if height == width and height in dataset_specs.IMAGE_SIZES:
    return x
  pad_h, pad_w = MODEL_IMAGE_SIZE - height, MODEL_IMAGE_SIZE - width
  if pad_h < 0 or pad_w < 0 or pad_h % 2 or pad_w % 2:
    raise ValueError(f'cannot centre {height}x{width} images in '
                     f'{MODEL_IMAGE_SIZE}x{MODEL_IMAGE_SIZE}')
  if pad_h or pad_w:
    x = tf.pad(x, [[0, 0], [pad_h // 2, pad_h // 2], [pad_w // 2, pad_w // 2], [0, 0]],
               constant_values=-1.0)
  return x


def batch_indices(step, num_examples: int, batch_size: int, seed: int) -> tf.Tensor:
  """Indices (int64 [batch_size]) of the examples in training batch `step`.

  See the module docstring: a pure function of (seed, step).

  Args:
    step: int scalar (tensor or Python), the batch number, from 0.
    num_examples: N, the size of the set sampled.
    batch_size: B.
    seed: the stream's seed.

  Returns:
    int64 [B] indices in [0, N).
  """
  positions = (tf.cast(step, tf.int64) * batch_size +
               tf.range(batch_size, dtype=tf.int64))
  epochs = positions // num_examples
  offsets = positions - epochs * num_examples
  seeds = tf.stack([
      tf.fill([batch_size], tf.constant(_INDEX_SHUFFLE_SEED_PAD, tf.int64)),
      tf.fill([batch_size], tf.constant(seed, tf.int64)),
      epochs,
  ], axis=1)
  return tf.raw_ops.RandomIndexShuffle(
      index=offsets, seed=seeds,
      max_index=tf.fill([batch_size], tf.constant(num_examples - 1, tf.int64)),
      rounds=_INDEX_SHUFFLE_ROUNDS)


def _check_arrays(images, labels):
  images = np.asarray(images)
  if images.ndim != 4 or images.dtype != np.uint8:
    raise ValueError(f'images must be uint8 [N, H, W, C], got {images.dtype} '
                     f'{images.shape}')
  if labels is not None:
    labels = np.asarray(labels)
    if labels.shape != (len(images),):
      raise ValueError(f'labels have shape {labels.shape}, expected ({len(images)},)')
    labels = tf.constant(labels, tf.int32)
  return tf.constant(images), labels


def _check_batch_size(batch_size):
  if batch_size < 1:
    raise ValueError(f'batch_size={batch_size} must be positive')


def training_stream(images, labels=None, *, batch_size: int = 64, seed: int = 0,
                    start_step: int = 0, augment=None) -> tf.data.Dataset:
  """An infinite stream of full training batches, batch t a function of (seed, t), not
  autotuned (`without_autotuning`).

  Args:
    images: uint8 [N, H, W, C], kept uint8 in memory; N >= 1, may be below batch_size.
    labels: optional int [N].
    batch_size: B; every batch is full.
    seed: the stream's seed (use different seeds for different streams of one run).
    start_step: the first batch to yield (the step a resumed run restarts at).
    augment: None, or a function (x, t) -> x applied to batch t's model input (t an int64
      scalar), itself a function of t alone so that batch t stays a function of (seed, t):
      the run's augmentation (augmentation.py), in the pipeline's parallel map, beside the
      training step rather than in it.

  Returns:
    A dataset of x float32 [B, S, S, C] (see `to_model_input`), or of (x, y int32 [B])
    when labels are given.
  """
  _check_batch_size(batch_size)
  if start_step < 0:
    raise ValueError(f'start_step={start_step} must be >= 0')
  num_examples = len(images)
  if num_examples < 1:
    raise ValueError('training_stream needs at least one example')
  images, labels = _check_arrays(images, labels)

  def make_batch(step):
    indices = batch_indices(step, num_examples, batch_size, seed)
    x = to_model_input(tf.gather(images, indices))
    if augment is not None:
      x = augment(x, step)
    return x if labels is None else (x, tf.gather(labels, indices))

  return (tf.data.Dataset.counter(start=start_step, dtype=tf.int64)
          .map(make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
          .prefetch(tf.data.AUTOTUNE)
          .with_options(without_autotuning()))


def without_autotuning() -> tf.data.Options:
  """Options that turn tf.data's autotuning off (the training and evaluation streams').

  An autotuned iterator keeps a background thread that re-tunes the pipeline at intervals
  growing to a minute; destroying the iterator waits for that thread's current sleep, so a
  process whose training stream lived through a whole run lingered after its final line.
  Without autotuning, AUTOTUNE means a fixed map parallelism (the CPU count, at most 16) and
  a prefetch buffer that grows while the consumer waits; the batches are the same.
  """
  options = tf.data.Options()
  options.autotune.enabled = False
  return options


def eval_stream(images, labels, *, batch_size: int = 256) -> tf.data.Dataset:
  """Every example once, in order, in batches of `batch_size` (the last may be smaller), as a
  tf.data pipeline, not autotuned (`without_autotuning`); `eval_batches` yields the same
  batches without one.

  Returns:
    A dataset of (x float32 [b, S, S, C] (see `to_model_input`), y int32 [b]).
  """
  _check_batch_size(batch_size)
  images, labels = _check_arrays(images, labels)

  def make_batch(indices):
    return to_model_input(tf.gather(images, indices)), tf.gather(labels, indices)

  return (tf.data.Dataset.range(images.shape[0]).batch(batch_size)
          .map(make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
          .prefetch(tf.data.AUTOTUNE)
          .with_options(without_autotuning()))


def eval_batches(images, labels, *, batch_size: int = 256):
  """`eval_stream`'s batches, bit for bit, made eagerly one at a time: the evaluation's.

  An evaluation reads each split once, in order, between training steps. A tf.data pipeline
  would be built (its map function traced), started and torn down for every split at every
  evaluation; here each batch is a slice of the images converted by `to_model_input`, the
  conversion the pipeline's map makes, on the CPU as the pipeline makes it (also where a GPU
  would take the op), with no pipeline and no iterator to destroy.

  Yields:
    (x float32 [b, S, S, C] (see `to_model_input`), y int32 [b]): batches of `batch_size`
    examples, the last one smaller when batch_size does not divide the number of examples.
  """
  _check_batch_size(batch_size)
  with tf.device('/cpu:0'):
    images, labels = _check_arrays(images, labels)
  for start in range(0, images.shape[0], batch_size):
    end = start + batch_size
    with tf.device('/cpu:0'):
      batch = to_model_input(images[start:end]), labels[start:end]
    yield batch


def steps_per_epoch(num_examples: int, batch_size: int) -> int:
  """Full batches per pass over `num_examples` examples: num_examples // batch_size."""
  _check_batch_size(batch_size)
  return num_examples // batch_size
