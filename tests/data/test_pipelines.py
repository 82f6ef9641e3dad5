"""tf.data pipelines: input scaling and padding, resumable training stream, eval stream and
the evaluation's batches."""
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl.data import pipelines


def _indexed_images(num_examples, size=32, channels=3):
  """Image i is filled with the value i (mod 256): its pixels tell which example it is."""
  values = (np.arange(num_examples) % 256).astype(np.uint8)
  return np.broadcast_to(values[:, None, None, None],
                         (num_examples, size, size, channels)).copy()


def _take(dataset, num_batches):
  return [tuple(t.numpy() for t in batch) for batch in dataset.take(num_batches)]


def _index_stream(num_examples, batch_size, seed, num_batches, start_step=0):
  """The example indices of training batches, read back through labels = arange(N)."""
  stream = pipelines.training_stream(
      _indexed_images(num_examples, size=28, channels=1), np.arange(num_examples),
      batch_size=batch_size, seed=seed, start_step=start_step)
  return np.stack([y for _, y in _take(stream, num_batches)])


# --- to_model_input -----------------------------------------------------------------


def test_scaling_maps_0_to_minus_1_and_255_to_1():
  images = np.array([0, 255, 127, 128], np.uint8).reshape(1, 2, 2, 1)
  images = np.tile(images, (1, 16, 16, 1))
  x = pipelines.to_model_input(images).numpy()
  assert x.dtype == np.float32 and x.shape == (1, 32, 32, 1)
  np.testing.assert_allclose(x[0, :2, :2, 0], [[-1.0, 1.0], [127 / 127.5 - 1,
                                                               128 / 127.5 - 1]],
                             rtol=0, atol=1e-7)


def test_28x28_is_padded_with_minus_1_and_centred():
  rng = np.random.default_rng(0)
  images = rng.integers(0, 256, (3, 28, 28, 1), dtype=np.uint8)
  x = pipelines.to_model_input(images).numpy()
  assert x.shape == (3, 32, 32, 1)
  np.testing.assert_allclose(x[:, 2:30, 2:30], images / 127.5 - 1, atol=1e-6)
  border = np.ones((32, 32), bool)
  border[2:30, 2:30] = False
  assert (x[:, border] == -1.0).all()
  assert border.sum() == 32 * 32 - 28 * 28


def test_32x32_passes_through_inside_tf_function():
  images = np.random.default_rng(1).integers(0, 256, (2, 32, 32, 3), dtype=np.uint8)

  @tf.function(input_signature=[tf.TensorSpec([None, 32, 32, 3], tf.uint8)])
  def serve(batch):
    return pipelines.to_model_input(batch)

  np.testing.assert_allclose(serve(images).numpy(), images / 127.5 - 1, atol=1e-6)
  spec = serve.get_concrete_function().structured_outputs
  assert spec.shape.as_list() == [None, 32, 32, 3]


@pytest.mark.parametrize('images, error', [
    (np.zeros((1, 32, 32, 3), np.float32), TypeError),
    (np.zeros((1, 36, 36, 3), np.uint8), ValueError),
    (np.zeros((1, 27, 27, 1), np.uint8), ValueError),
])
def test_bad_inputs_are_refused(images, error):
  with pytest.raises(error):
    pipelines.to_model_input(images)


# --- training_stream ----------------------------------------------------------------


@pytest.mark.parametrize('num_examples, batch_size', [(12, 4), (10, 4), (10, 64), (1, 3)])
def test_each_epoch_covers_every_example_exactly_once(num_examples, batch_size):
  num_epochs = 5
  num_batches = -(-num_epochs * num_examples // batch_size)
  positions = _index_stream(num_examples, batch_size, 0, num_batches).reshape(-1)
  epochs = positions[:num_epochs * num_examples].reshape(num_epochs, num_examples)
  for epoch in epochs:
    np.testing.assert_array_equal(np.sort(epoch), np.arange(num_examples))
  if num_examples > 3:  # every epoch is shuffled anew
    assert len({tuple(e) for e in epochs}) == num_epochs


@pytest.mark.parametrize('num_examples, batch_size', [(10, 4), (10, 64), (100, 8)])
def test_resume_at_step_t_equals_iterating_from_0(num_examples, batch_size):
  images = _indexed_images(num_examples)
  labels = np.arange(num_examples) % 10
  full = _take(pipelines.training_stream(images, labels, batch_size=batch_size, seed=5),
               12)
  for start in (1, 7, 11):
    resumed = _take(pipelines.training_stream(images, labels, batch_size=batch_size,
                                              seed=5, start_step=start), 12 - start)
    for (x_full, y_full), (x_res, y_res) in zip(full[start:], resumed):
      np.testing.assert_array_equal(x_full, x_res)
      np.testing.assert_array_equal(y_full, y_res)


def test_far_start_step_matches_the_formula():
  # Step 10**6 is computed directly, without running through the earlier batches.
  indices = _index_stream(50, 16, seed=3, num_batches=1, start_step=10**6)[0]
  positions = 10**6 * 16 + np.arange(16)
  expected = [
      tf.random.experimental.index_shuffle(int(p % 50), [3, int(p // 50)], 49).numpy()
      for p in positions]
  np.testing.assert_array_equal(indices, expected)


def test_training_stream_is_not_autotuned_and_yields_the_autotuned_batches():
  """An autotuned iterator's tuning thread holds up its destruction (pipelines.
  without_autotuning): the training stream turns autotuning off, batch for batch the same."""
  images, labels = _indexed_images(30, size=28, channels=1), np.arange(30) % 10
  _assert_not_autotuned_with_the_autotuned_batches(
      pipelines.training_stream(images, labels, batch_size=8, seed=2, start_step=3), 6)


def _assert_not_autotuned_with_the_autotuned_batches(stream, batches):
  assert stream.options().autotune.enabled is False
  autotuned = tf.data.Options()
  autotuned.autotune.enabled = True
  reference = stream.with_options(autotuned)
  assert reference.options().autotune.enabled is True
  for (x, y), (x_ref, y_ref) in zip(_take(stream, batches), _take(reference, batches)):
    np.testing.assert_array_equal(x, x_ref)
    np.testing.assert_array_equal(y, y_ref)


def test_eval_stream_is_not_autotuned_and_yields_the_autotuned_batches():
  images, labels = _indexed_images(30, size=28, channels=1), np.arange(30) % 10
  _assert_not_autotuned_with_the_autotuned_batches(
      pipelines.eval_stream(images, labels, batch_size=8), 4)


def test_images_and_labels_stay_paired_and_batches_are_full():
  num_examples = 37
  images = _indexed_images(num_examples, size=28, channels=1)
  stream = pipelines.training_stream(images, np.arange(num_examples), batch_size=8,
                                     seed=1)
  assert stream.element_spec[0].shape.as_list() == [8, 32, 32, 1]
  assert stream.element_spec[1].dtype == tf.int32
  for x, y in _take(stream, 10):
    assert x.shape == (8, 32, 32, 1) and y.shape == (8,)
    np.testing.assert_allclose(x[:, 16, 16, 0], y / 127.5 - 1, atol=1e-6)


def test_unlabeled_stream_yields_images_only():
  stream = pipelines.training_stream(_indexed_images(20), batch_size=6, seed=0)
  assert isinstance(stream.element_spec, tf.TensorSpec)
  x = next(iter(stream)).numpy()
  assert x.shape == (6, 32, 32, 3)
  # Batch 0 is positions 0-5 of epoch 0, each the index_shuffle of its position (the formula
  # of test_far_start_step_matches_the_formula), read back from the images' pixel values.
  expected = [tf.random.experimental.index_shuffle(p, [0, 0], 19).numpy() for p in range(6)]
  np.testing.assert_array_equal(np.round((x[:, 0, 0, 0] + 1) * 127.5), expected)


def test_seeds_change_the_order():
  a = _index_stream(30, 10, seed=0, num_batches=3)
  b = _index_stream(30, 10, seed=0, num_batches=3)
  c = _index_stream(30, 10, seed=1, num_batches=3)
  np.testing.assert_array_equal(a, b)
  assert not np.array_equal(a, c)


def test_labeled_set_smaller_than_a_batch_is_cycled():
  # 10 labels, batch 64: batch 0 holds epochs 0-5 and 4 examples of epoch 6, so each
  # example appears 6 or 7 times; batches 0-1 hold 12.8 epochs: 12 or 13 times.
  indices = _index_stream(10, 64, seed=2, num_batches=2)
  assert set(np.bincount(indices[0], minlength=10)) <= {6, 7}
  assert set(np.bincount(indices.reshape(-1), minlength=10)) <= {12, 13}


@pytest.mark.parametrize('kwargs', [dict(batch_size=0), dict(start_step=-1)])
def test_bad_stream_arguments_raise(kwargs):
  with pytest.raises(ValueError):
    pipelines.training_stream(_indexed_images(4), **kwargs)


# --- eval_stream ----------------------------------------------------------------------


@pytest.mark.parametrize('num_examples, batch_size', [(10, 4), (12, 4), (3, 256)])
def test_eval_stream_sees_every_example_once_in_order(num_examples, batch_size):
  images = _indexed_images(num_examples, size=28, channels=1)
  batches = _take(pipelines.eval_stream(images, np.arange(num_examples),
                                        batch_size=batch_size), 100)
  assert len(batches) == -(-num_examples // batch_size)
  assert [len(y) for _, y in batches][:-1] == [batch_size] * (len(batches) - 1)
  y = np.concatenate([y for _, y in batches])
  x = np.concatenate([x for x, _ in batches])
  np.testing.assert_array_equal(y, np.arange(num_examples))
  assert x.shape == (num_examples, 32, 32, 1)
  np.testing.assert_allclose(x[:, 2:30, 2:30], images / 127.5 - 1, atol=1e-6)


@pytest.mark.parametrize('num_examples, batch_size, size, channels',
                         [(600, 256, 28, 1), (512, 256, 32, 3), (5, 256, 28, 1), (7, 3, 32, 1)])
def test_eval_batches_are_the_eval_streams_bit_for_bit(num_examples, batch_size, size,
                                                       channels):
  """The evaluation's batches without tf.data: eval_stream's, batch for batch (every full batch
  of batch_size, the same smaller last one), every pixel value's model input to the bit."""
  images = np.random.default_rng(0).integers(0, 256, (num_examples, size, size, channels),
                                             dtype=np.uint8)
  images[0].flat[:256] = np.arange(256)  # Every pixel value.
  labels = np.arange(num_examples) % 10
  stream = _take(pipelines.eval_stream(images, labels, batch_size=batch_size), 100)
  batches = [(x.numpy(), y.numpy())
             for x, y in pipelines.eval_batches(images, labels, batch_size=batch_size)]
  assert [len(y) for _, y in batches] == [len(y) for _, y in stream]
  assert sum(len(y) for _, y in batches) == num_examples
  for (x, y), (x_stream, y_stream) in zip(batches, stream):
    assert x.dtype == np.float32 and y.dtype == np.int32
    assert x.tobytes() == x_stream.tobytes() and x.shape == x_stream.shape
    np.testing.assert_array_equal(y, y_stream)


def test_eval_batches_build_no_tf_data_pipeline_and_convert_on_the_cpu(monkeypatch):
  """No dataset is iterated (none to build, tune and destroy at each evaluation); the batches
  are made on the CPU, as a pipeline makes them."""
  def no_dataset(self):
    raise AssertionError('a tf.data pipeline was iterated')
  monkeypatch.setattr(tf.data.Dataset, '__iter__', no_dataset)
  images = _indexed_images(10, size=28, channels=1)
  batches = list(pipelines.eval_batches(images, np.arange(10), batch_size=4))
  assert all(t.device.endswith('CPU:0') for batch in batches for t in batch)
  np.testing.assert_array_equal(np.concatenate([y for _, y in batches]), np.arange(10))


def test_steps_per_epoch():
  assert pipelines.steps_per_epoch(50000, 64) == 781
  assert pipelines.steps_per_epoch(64, 64) == 1
  assert pipelines.steps_per_epoch(10, 64) == 0
