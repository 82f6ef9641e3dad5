"""Label splits as users have them: imbalanced labels (and unlabeled images to their profile),
a validation split of a number per class, and class mismatch (a subset of the classes, with a
share of foreign images among a fixed number of unlabeled ones); each against counts made
independently, and each impossible request refused with its fix."""
from fractions import Fraction

import numpy as np
import pytest

from tests import fixtures
from tf_ipmssl import errors
from tf_ipmssl.data import splits
from tf_ipmssl.data import ssl_data

pytestmark = pytest.mark.usefixtures('no_ambient_data')


def test_geometric_counts_sum_to_the_total_on_the_profile():
  counts = splits.geometric_counts(100, 10, 10.0)
  assert counts == [25, 19, 15, 11, 9, 7, 5, 4, 3, 2] and sum(counts) == 100
  exact = 100 * 10.0 ** (-np.arange(10) / 9) / np.sum(10.0 ** (-np.arange(10) / 9))
  assert np.all(np.abs(np.array(counts) - exact) < 1)  # Each within rounding of its share.
  assert splits.geometric_counts(100, 10, 1.0) == [10] * 10
  assert splits.geometric_counts(7, 3, 1.0) == [3, 2, 2]
  with pytest.raises(errors.SplitError, match='raise num_labeled'):
    splits.geometric_counts(10, 10, 100.0)


def test_profile_counts_keep_the_proportions_within_what_each_class_has():
  assert splits.profile_counts([100, 100, 100], [10, 5, 1]) == [100, 50, 10]
  assert splits.profile_counts([40, 100, 100], [10, 5, 1]) == [40, 20, 4]
  counts = splits.profile_counts([100, 100, 3], [10, 5, 1])
  assert counts == [30, 15, 3]


def _profile_by_hand(available, profile):
  """Each class's count under the profile, in exact rational arithmetic: the largest scale M
  at which no class asks for more than it has, then floor(M * profile[c] / max(profile)), and
  never fewer than profile[c] (written apart from splits.profile_counts)."""
  top = max(profile)
  scale = min(Fraction(int(a) * top, p) for a, p in zip(available, profile))
  return [max(p, int(scale * p / top)) for p in profile]


def test_the_profile_by_hand_gives_known_answers():
  assert _profile_by_hand([55] * 5, [8, 4, 2, 2, 1]) == [55, 27, 13, 13, 6]
  assert _profile_by_hand([100, 100, 3], [10, 5, 1]) == [30, 15, 3]


def _labels(per_class=60, num_classes=5):
  rng = np.random.default_rng(3)
  return rng.permutation(np.repeat(np.arange(num_classes), per_class))


def test_explicit_counts_draw_that_many_of_each_class():
  labels = _labels()
  split = splits.make_splits(labels, 5, None, 20, seed=2, labeled_counts=[9, 5, 3, 2, 1])
  np.testing.assert_array_equal(np.bincount(labels[split.labeled], minlength=5), [9, 5, 3, 2, 1])
  assert not np.intersect1d(split.labeled, split.validation).size
  # Left as it is, the unlabeled set is train minus validation.
  np.testing.assert_array_equal(split.unlabeled, np.setdiff1d(np.arange(300), split.validation))


def test_balanced_counts_given_explicitly_draw_the_balanced_split():
  """The same draws as num_labeled / K per class: today's splits stay as they were."""
  labels = _labels()
  balanced = splits.make_splits(labels, 5, 20, 30, seed=7)
  explicit = splits.make_splits(labels, 5, None, 30, seed=7, labeled_counts=[4] * 5)
  for part in ('labeled', 'validation', 'unlabeled'):
    np.testing.assert_array_equal(getattr(balanced, part), getattr(explicit, part))


def test_an_imbalanced_unlabeled_set_follows_the_labels_profile():
  labels = _labels()
  counts = [8, 4, 2, 2, 1]
  split = splits.make_splits(labels, 5, None, 25, seed=1, labeled_counts=counts,
                             unlabeled_profile=True)
  available = np.bincount(labels[np.setdiff1d(np.arange(300), split.validation)], minlength=5)
  expected = _profile_by_hand(available, counts)
  np.testing.assert_array_equal(np.bincount(labels[split.unlabeled], minlength=5), expected)
  assert expected[0] == available[0] and expected[-1] < available[-1]  # The cut binds.
  assert np.isin(split.labeled, split.unlabeled).all()  # The labeled images stay in it.
  assert not np.intersect1d(split.unlabeled, split.validation).size
  # The labels are those drawn without the cut.
  plain = splits.make_splits(labels, 5, None, 25, seed=1, labeled_counts=counts)
  np.testing.assert_array_equal(plain.labeled, split.labeled)


def test_validation_per_class_holds_out_that_many_of_each_class():
  labels = _labels()
  split = splits.make_splits(labels, 5, 10, 0, seed=4, validation_per_class=3)
  np.testing.assert_array_equal(np.bincount(labels[split.validation], minlength=5), [3] * 5)
  np.testing.assert_array_equal(split.unlabeled, np.setdiff1d(np.arange(300), split.validation))
  assert not np.intersect1d(split.labeled, split.validation).size
  again = splits.make_splits(labels, 5, 10, 0, seed=4, validation_per_class=3)
  np.testing.assert_array_equal(again.validation, split.validation)
  other = splits.make_splits(labels, 5, 10, 0, seed=5, validation_per_class=3)
  assert not np.array_equal(other.validation, split.validation)


@pytest.mark.parametrize('kwargs, fragment', [
    (dict(labeled_counts=[70, 1, 1, 1, 1]), 'lower its count to at most 60'),
    (dict(labeled_counts=[1, 1, 1]), 'list 5 positive counts'),
    (dict(labeled_counts=[1, 0, 1, 1, 1]), 'list 5 positive counts'),
    (dict(validation_per_class=61, validation_size=0), 'at most 60'),
    (dict(validation_per_class=2, validation_size=10), 'validation_size = 0'),
])
def test_impossible_label_splits_name_the_fix(kwargs, fragment):
  args = dict(num_labeled=None, validation_size=0, seed=0)
  args.update(kwargs)
  with pytest.raises(errors.SplitError) as e:
    splits.make_splits(_labels(), 5, args.pop('num_labeled'), args.pop('validation_size'),
                       **args)
  assert fragment in str(e.value)


@pytest.fixture(scope='module')
def fashion_dir(tmp_path_factory):
  directory = tmp_path_factory.mktemp('fashion')
  arrays = fixtures.make_fake_dataset(str(directory), 'fashion_mnist', num_train=600,
                                      num_test=100)
  return str(directory), arrays


def _data(fashion_dir, **settings):
  args = dict(dataset='fashion_mnist', source='local', data_dir=fashion_dir[0],
              num_labeled=20, validation_size=50)
  args.update(settings)
  return ssl_data.build_ssl_data(ssl_data.BuildSslData(**args))


def test_an_imbalance_ratio_draws_geometric_labels_and_leaves_test_alone(fashion_dir):
  _, (_, _, _, test_y) = fashion_dir
  data = _data(fashion_dir, num_labeled=40, imbalance_ratio=10.0)
  counts = data.counts()
  assert counts['labeled'] == splits.geometric_counts(40, 10, 10.0)
  assert counts['test'] == np.bincount(test_y, minlength=10).tolist()
  _, (_, train_y, _, _) = fashion_dir
  available = np.bincount(train_y, minlength=10) - np.array(counts['validation'])
  per_class = np.bincount(train_y[data.splits.unlabeled], minlength=10).tolist()
  assert per_class == _profile_by_hand(available, counts['labeled'])
  assert counts['unlabeled'] == sum(per_class) < sum(available)
  balanced = _data(fashion_dir, num_labeled=40)
  assert np.bincount(train_y[balanced.splits.unlabeled], minlength=10).tolist() == (
      available.tolist())
  kept = _data(fashion_dir, num_labeled=40, imbalance_ratio=10.0, imbalanced_unlabeled=False)
  assert kept.counts()['unlabeled'] == balanced.counts()['unlabeled']
  np.testing.assert_array_equal(kept.labeled_images, data.labeled_images)


def test_class_mismatch_keeps_the_known_classes_and_draws_foreign_unlabeled(fashion_dir):
  _, (train_x, train_y, test_x, test_y) = fashion_dir
  known = (5, 'Trouser', 0)  # Sandal, Trouser, T-shirt/top: labels 0, 1, 2 in this order.
  runs = {share: _data(fashion_dir, num_labeled=6, validation_size=30, classes=known,
                       unlabeled_size=100, foreign_share=share) for share in (0.0, 0.5, 1.0)}
  for share, data in runs.items():
    assert data.num_classes == 3
    assert data.class_names == ('Sandal', 'Trouser', 'T-shirt/top')
    assert data.counts()['unlabeled'] == 100
    assert data.foreign_unlabeled == round(100 * share)
    # Test keeps the known classes' images, relabelled; the others' are kept apart.
    original = {5: 0, 1: 1, 0: 2}
    keep = np.isin(test_y, list(original))
    np.testing.assert_array_equal(data.test_images, test_x[keep])
    np.testing.assert_array_equal(data.test_labels, [original[y] for y in test_y[keep]])
    np.testing.assert_array_equal(data.foreign_test_images, test_x[~keep])
    # Every labeled and validation image is a known-class training image, with its label.
    for images, labels in ((data.labeled_images, data.labeled_labels),
                           (data.validation_images, data.validation_labels)):
      for image, label in zip(images, labels):
        matches = np.flatnonzero((train_x == image).all(axis=(1, 2, 3)))
        assert [original.get(int(y)) for y in train_y[matches]].count(int(label)) >= 1
    # The unlabeled images of other classes: as many as the share asks.
    foreign_train = train_x[~np.isin(train_y, list(original))]
    flat = foreign_train.reshape(len(foreign_train), -1)
    from_foreign = sum(
        bool((flat == image.reshape(-1)).all(axis=1).any()) for image in data.unlabeled_images)
    assert from_foreign == round(100 * share)
  # One label split for every share: the contrast between shares is paired.
  for data in runs.values():
    np.testing.assert_array_equal(data.labeled_images, runs[0.0].labeled_images)
    np.testing.assert_array_equal(data.validation_images, runs[0.0].validation_images)


@pytest.mark.parametrize('settings, error, fragment', [
    (dict(imbalance_ratio=0.5), errors.ConfigError, 'imbalance_ratio must be a number >= 1'),
    (dict(imbalance_ratio=10.0, num_labeled=None), errors.ConfigError,
     'bind build_ssl_data.num_labeled'),
    (dict(imbalance_ratio=200.0), errors.SplitError, 'raise num_labeled'),
    (dict(labeled_per_class=(3, 2), num_labeled=None), errors.SplitError, 'lists 2 counts for 10 classes'),
    (dict(labeled_per_class=(2,) * 10, num_labeled=30), errors.ConfigError,
     'bind num_labeled = None (or 20)'),
    (dict(labeled_per_class=(80,) + (1,) * 9, num_labeled=None), errors.SplitError,
     'lower its count'),
    (dict(validation_per_class=5), errors.ConfigError, 'validation_size = 0'),
    (dict(validation_per_class=70, validation_size=0), errors.SplitError,
     'lower validation_per_class'),
    (dict(classes=(0, 'Cat')), errors.ConfigError, "'Cat' is no class of fashion_mnist"),
    (dict(classes=(0, 0)), errors.ConfigError, 'names a class twice'),
    (dict(classes=(3,)), errors.ConfigError, 'at least two classes'),
    (dict(foreign_share=0.5), errors.ConfigError, 'bind build_ssl_data.classes'),
    (dict(foreign_share=1.5, classes=(0, 1), unlabeled_size=10), errors.ConfigError,
     'a share from 0 to 1'),
    (dict(classes=(0, 1), unlabeled_size=490, foreign_share=1.0, num_labeled=2),
     errors.SplitError, 'lower unlabeled_size'),
    (dict(imbalance_ratio=2.0, unlabeled_size=50), errors.ConfigError,
     'imbalanced_unlabeled = False'),
])
def test_impossible_settings_are_refused_with_their_fix(fashion_dir, settings, error, fragment):
  with pytest.raises(error) as e:
    _data(fashion_dir, **settings)
  assert fragment in str(e.value)
  assert isinstance(e.value, errors.UserError)
