"""The best step's rule (loop.lower_error): an error replaces the best only when it counts
fewer images wrong; of equal counts the earliest step stays the best, whatever the float32
rounding of the percentage."""
import numpy as np
import tensorflow as tf

from tf_ipmssl.run_dir import reporting
from tf_ipmssl.training import loop


def _best(error):
  return tf.Variable(np.float32(error), dtype=tf.float32)


def test_equal_counts_never_replace_the_best_whichever_way_float32_rounds():
  # 25.62% of 5,000 rounds up in float32 (25.6200008...), 89.64% down (89.6399993...): under
  # the float64-against-float32 comparison the first tie went to the later step.
  up, down = reporting.percent(1281, 5000), reporting.percent(4482, 5000)
  assert float(np.float32(up)) > up and float(np.float32(down)) < down
  assert up < float(np.float32(up))  # What decided the tie before.
  for value in (up, down):
    assert not loop.lower_error(value, _best(value))


def test_every_count_of_a_validation_split_is_ordered_as_the_counts_are():
  for size in (50, 5000, 10000):
    counts = np.random.default_rng(size).integers(0, size + 1, 300)
    for a, b in zip(counts[:-1], counts[1:]):
      lower = loop.lower_error(reporting.percent(int(a), size),
                               _best(reporting.percent(int(b), size)))
      assert lower == (a < b), (size, a, b)


def test_anything_replaces_the_initial_best():
  assert loop.lower_error(100.0, _best(np.inf))
