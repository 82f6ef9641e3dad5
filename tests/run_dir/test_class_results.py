"""Per-class results (run_dir/class_results.py) against known answers and brute-force counts."""
import math

import numpy as np
import pytest

from tf_ipmssl.run_dir import class_results
from tf_ipmssl.run_dir import reporting


def test_a_known_confusion_matrix_and_its_rates():
  labels = [0, 0, 1, 1, 1, 2]
  predicted = [0, 1, 1, 1, 0, 2]
  confusion = class_results.confusion_matrix(labels, predicted, 4)
  np.testing.assert_array_equal(confusion, [[1, 1, 0, 0], [1, 2, 0, 0], [0, 0, 1, 0],
                                            [0, 0, 0, 0]])
  assert confusion.dtype == np.int64
  assert class_results.error(confusion) == reporting.percent(2, 6)
  assert class_results.class_errors(confusion) == [50.0, 100 / 3, 0.0, None]
  assert class_results.balanced_error(confusion) == pytest.approx((50 + 100 / 3 + 0) / 3)
  assert class_results.results('test', confusion, 'abcd') == {
      'test_confusion': [[1, 1, 0, 0], [1, 2, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]],
      'test_class_errors': {'a': 50.0, 'b': 100 / 3, 'c': 0.0, 'd': None},
      'test_balanced_error': class_results.balanced_error(confusion)}
  assert class_results.results('validation', None, 'ab') == {
      'validation_confusion': None, 'validation_class_errors': None,
      'validation_balanced_error': None}
  assert class_results.balanced_error(np.zeros([3, 3], np.int64)) is None


def test_random_predictions_against_a_count_one_by_one():
  """The trace gives exactly the error of the mistakes counted one by one; the rows are the
  class counts; each class's error is its own count's rate."""
  rng = np.random.default_rng(0)
  for trial in range(50):
    k = int(rng.integers(2, 12))
    n = int(rng.integers(1, 400))
    labels = rng.integers(0, k, n)
    predicted = np.where(rng.random(n) < 0.6, labels, rng.integers(0, k, n))
    confusion = class_results.confusion_matrix(labels, predicted, k)
    brute = np.zeros([k, k], np.int64)
    for t, p in zip(labels, predicted):
      brute[t, p] += 1
    np.testing.assert_array_equal(confusion, brute)
    mistakes = sum(int(t != p) for t, p in zip(labels, predicted))
    assert class_results.error(confusion) == reporting.percent(mistakes, n), trial
    np.testing.assert_array_equal(confusion.sum(axis=1), np.bincount(labels, minlength=k))
    for c, rate in enumerate(class_results.class_errors(confusion)):
      members = labels == c
      if not members.any():
        assert rate is None
      else:
        assert rate == reporting.percent(int(np.sum(predicted[members] != c)),
                                         int(members.sum()))
    present = [r for r in class_results.class_errors(confusion) if r is not None]
    assert class_results.balanced_error(confusion) == pytest.approx(sum(present) / len(present))


def test_out_of_range_classes_are_refused():
  with pytest.raises(ValueError, match='outside'):
    class_results.confusion_matrix([0, 3], [0, 1], 3)
  with pytest.raises(ValueError, match='outside'):
    class_results.confusion_matrix([0, 1], [0, -1], 3)
  with pytest.raises(ValueError, match='2 labels but 1'):
    class_results.confusion_matrix([0, 1], [0], 3)


def test_the_image_shades_each_row_by_its_share():
  confusion = np.array([[4, 0], [2, 2]])
  picture = class_results.image(confusion, cell=3)
  assert picture.shape == (1, 6, 6, 3) and picture.dtype == np.uint8
  assert picture[0, 0, 3].tolist() == [255, 255, 255]  # An empty cell: white.
  assert picture[0, 0, 0].tolist() == [0, round(255 * 0.7), 0]  # A whole row, diagonal.
  assert picture[0, 3, 0].tolist() == [round(255 * 0.5), round(255 * 0.7), round(255 * 0.9)]
  assert math.isclose(picture[0, 5, 5, 1], round(255 * 0.85))
