"""Labeled / validation / unlabeled splits and the smoke-run subsets."""
import numpy as np
import pytest

from tf_ipmssl import errors
from tf_ipmssl.data import splits


def _labels(num_examples=1000, num_classes=10, seed=0):
  """Unbalanced labels: class c has roughly proportional-to-(c + 5) examples."""
  rng = np.random.default_rng(seed)
  weights = np.arange(5, 5 + num_classes, dtype=float)
  return rng.choice(num_classes, size=num_examples, p=weights / weights.sum())


def _check_invariants(split, labels, validation_size):
  num_examples = len(labels)
  for part in (split.labeled, split.validation, split.unlabeled):
    assert part.dtype == np.int64
    assert (np.diff(part) > 0).all()  # sorted, no duplicates
  assert len(split.validation) == validation_size
  assert not np.intersect1d(split.validation, split.labeled).size
  np.testing.assert_array_equal(
      split.unlabeled, np.setdiff1d(np.arange(num_examples), split.validation))
  assert np.isin(split.labeled, split.unlabeled).all()


def test_per_class_counts_and_disjointness():
  labels = _labels()
  split = splits.make_splits(labels, 10, num_labeled=100, validation_size=200, seed=1)
  _check_invariants(split, labels, 200)
  np.testing.assert_array_equal(np.bincount(labels[split.labeled], minlength=10),
                                [10] * 10)
  assert len(split.unlabeled) == 800


def test_all_labels_baseline():
  labels = _labels()
  split = splits.make_splits(labels, 10, num_labeled=None, validation_size=50, seed=0)
  _check_invariants(split, labels, 50)
  np.testing.assert_array_equal(split.labeled, split.unlabeled)


def test_zero_validation():
  labels = _labels(100)
  split = splits.make_splits(labels, 10, num_labeled=20, validation_size=0, seed=0)
  _check_invariants(split, labels, 0)
  np.testing.assert_array_equal(split.unlabeled, np.arange(100))


def test_same_seed_same_split_different_seed_different_split():
  labels = _labels()
  a = splits.make_splits(labels, 10, 100, 200, seed=7)
  b = splits.make_splits(labels.copy(), 10, 100, 200, seed=7)
  c = splits.make_splits(labels, 10, 100, 200, seed=8)
  for field in ('labeled', 'validation', 'unlabeled'):
    np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
  assert not np.array_equal(a.labeled, c.labeled)
  assert not np.array_equal(a.validation, c.validation)


def test_split_is_pinned_across_machines():
  # PCG64 streams are platform independent: these exact indices are seed 0's split. If
  # this fails after a numpy upgrade, label splits (part of a run's identity) changed.
  labels = np.arange(20) % 2
  split = splits.make_splits(labels, 2, num_labeled=4, validation_size=4, seed=0)
  np.testing.assert_array_equal(split.validation, [2, 4, 6, 19])
  np.testing.assert_array_equal(split.labeled, [9, 10, 12, 13])


@pytest.mark.parametrize('kwargs, fragments', [
    (dict(num_labeled=105), ['num_labeled=105 is not divisible by num_classes=10',
                             'e.g. 100']),
    (dict(num_labeled=-10), ['num_labeled=-10 must be at least 1', 'num_labeled=None']),
    (dict(num_labeled=0), ['num_labeled=0 must be at least 1']),
    (dict(validation_size=-1), ['validation_size=-1 must be at least 0']),
    (dict(validation_size=1000), ['validation_size=1000 must be smaller than the 1000 '
                                  'training examples', 'lower validation_size']),
    (dict(num_labeled=2.5), ['num_labeled=2.5 must be an integer']),
    (dict(num_classes=5), ['outside [0, 4]']),
])
def test_impossible_requests_raise_split_error(kwargs, fragments):
  args = dict(labels=_labels(), num_classes=10, num_labeled=100, validation_size=100,
              seed=0)
  args.update(kwargs)
  with pytest.raises(errors.SplitError) as e:
    splits.make_splits(**args)
  for fragment in fragments:
    assert fragment in str(e.value)


def test_too_many_labels_per_class_names_the_class():
  labels = np.repeat(np.arange(3), [50, 50, 8])  # class 2 has only 8 examples
  with pytest.raises(errors.SplitError) as e:
    splits.make_splits(labels, 3, num_labeled=30, validation_size=0, seed=0)
  assert ('needs 10 labeled examples per class, but class 2 has only 8 training '
          'examples left') in str(e.value)
  assert 'at most 24' in str(e.value)
  # Exactly what is left works.
  split = splits.make_splits(labels, 3, num_labeled=24, validation_size=0, seed=0)
  np.testing.assert_array_equal(np.bincount(labels[split.labeled]), [8, 8, 8])


def test_validation_is_counted_before_labels_are_drawn():
  labels = np.repeat(np.arange(2), 10)
  split = splits.make_splits(labels, 2, num_labeled=None, validation_size=10, seed=3)
  left = np.bincount(labels[split.unlabeled], minlength=2)
  ask = 2 * (left.min() + 1)
  with pytest.raises(errors.SplitError, match=f'only {left.min()} training examples'):
    splits.make_splits(labels, 2, num_labeled=ask, validation_size=10, seed=3)


def test_subset_is_balanced_sorted_and_nested():
  labels = _labels(1000)
  small = splits.subset_indices(labels, 100, seed=0)
  large = splits.subset_indices(labels, 300, seed=0)
  assert small.dtype == np.int64 and (np.diff(small) > 0).all()
  np.testing.assert_array_equal(np.bincount(labels[small], minlength=10), [10] * 10)
  np.testing.assert_array_equal(np.bincount(labels[large], minlength=10), [30] * 10)
  assert np.isin(small, large).all()
  assert not np.array_equal(small, splits.subset_indices(labels, 100, seed=1))
  np.testing.assert_array_equal(splits.subset_indices(labels, None), np.arange(1000))
  np.testing.assert_array_equal(splits.subset_indices(labels, 5000), np.arange(1000))


def test_subset_fills_with_other_classes_when_one_runs_out():
  labels = np.repeat(np.arange(2), [3, 50])
  subset = splits.subset_indices(labels, 20, seed=0)
  np.testing.assert_array_equal(np.bincount(labels[subset]), [3, 17])
