"""Error rates as counts make them: 100 · mistakes / images, read back exactly from the run
state's float32 variables; counted in the evaluation's batches, without a tf.data pipeline and
with a predict function traced twice in all."""
import json

import numpy as np
import tensorflow as tf

from tf_ipmssl.data import pipelines
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.run_dir import reporting
from tf_ipmssl.training import evaluation


def test_a_rate_is_one_division_of_its_count():
  assert json.dumps(reporting.percent(2556, 10000)) == '25.56'
  assert json.dumps(reporting.percent(909, 1000)) == '90.9'
  assert reporting.percent(1, 3) == 100 / 3
  assert reporting.percent(0, 0) == 0.0


def test_every_count_is_read_back_from_its_float32_rounding():
  """Every count k of the usual split sizes (and a prime, and the largest test set, SVHN's):
  the float32 a checkpoint holds gives back percent(k, n) exactly."""
  for examples in (20, 31, 1000, 5000, 10000, 26032):
    for mistakes in range(examples + 1):
      rate = reporting.percent(mistakes, examples)
      stored = np.float32(rate)
      assert reporting.stored_percent(stored, examples) == rate, (mistakes, examples)
  assert np.isnan(reporting.stored_percent(np.float32(np.nan), 10))


def _images_and_labels(num_examples, seed=0):
  rng = np.random.default_rng(seed)
  return (rng.integers(0, 256, (num_examples, 28, 28, 1), dtype=np.uint8),
          rng.integers(0, 10, num_examples))


def test_an_error_rate_counts_the_mistakes_batch_by_batch_without_tf_data(monkeypatch):
  """error_rate predicts every batch of 256 and a smaller last one, as eval_stream made them,
  with no tf.data pipeline built (none to trace, tune and destroy per split and evaluation);
  its rate is the mistakes counted in NumPy of a classifier set by hand."""
  def no_dataset(self):
    raise AssertionError('a tf.data pipeline was iterated')
  monkeypatch.setattr(tf.data.Dataset, '__iter__', no_dataset)
  images, labels = _images_and_labels(600)
  sizes = []

  def predict(x):  # The class: the number of pixels >= 128 (x > 0), modulo 10.
    sizes.append(int(x.shape[0]))
    return tf.cast(tf.math.count_nonzero(tf.reshape(x, [x.shape[0], -1]) > 0, axis=1) % 10,
                   tf.int32)
  predicted = np.count_nonzero(images.reshape(600, -1) >= 128, axis=1) % 10
  mistakes = int(np.count_nonzero(predicted != labels))
  assert 0 < mistakes < 600
  assert evaluation.error_rate(predict, images, labels) == reporting.percent(mistakes, 600)
  assert sizes == [256, 256, 88]


def test_the_predict_function_traces_twice_over_many_evaluations():
  """Three evaluations of three splits (full batches, smaller last ones, a split smaller
  than a batch): make_predict_fn's function traces twice, and each error is the count of
  the critic's own argmax over its logits, made in the same batches."""
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=0.0625), 10, 1, seed=0)
  predict = evaluation.make_predict_fn(critic)
  logits_fn = tf.function(lambda x: critic.classify(x, training=False), reduce_retracing=True)
  splits = [_images_and_labels(n, seed=n) for n in (600, 100, 300)]
  for _ in range(3):
    for images, labels in splits:
      logits = np.concatenate([logits_fn(pipelines.to_model_input(images[i:i + 256])).numpy()
                               for i in range(0, len(images), 256)])
      mistakes = int(np.count_nonzero(np.argmax(logits, axis=1) != labels))
      assert evaluation.error_rate(predict, images, labels) == reporting.percent(
          mistakes, len(labels))
  assert predict.experimental_get_tracing_count() == 2
