"""The split-level tests of the confirmation against known answers, brute-force enumeration
and a simulated null with the shared-run layout of the exploratory batch-norm family."""
import itertools

import numpy as np
import pytest

from studies.fashion_mnist_100 import paired_test
from studies.fashion_mnist_100 import split_test
from studies.tests import counting


def test_six_splits_all_in_the_papers_direction_give_one_in_64():
  result = split_test.signed_rank_over_splits([3.1, 0.2, 5.0, 1.1, 2.2, 9.9])
  assert result.p_value == 1 / 64
  assert result.p_other == 1.0
  assert result.n == 6
  assert result.smallest_p == 1 / 64


def test_one_split_the_other_way():
  # Ranks 1-5 positive, rank 6 negative: W+ = 15; the patterns with W+ ≥ 15 are the
  # subsets of 1..6 summing to ≤ 6 (their complement): 14 of 64.
  assert split_test.signed_rank_over_splits(
      [1.0, 2.0, 3.0, 4.0, 5.0, -60.0]).p_value == pytest.approx(14 / 64)
  # The smallest split the other way: W+ = 20, 2 patterns of 64 reach it.
  assert split_test.signed_rank_over_splits(
      [-0.5, 2.0, 3.0, 4.0, 5.0, 60.0]).p_value == pytest.approx(2 / 64)


@pytest.mark.parametrize('contrasts', [
    [9.9, 7.75, 40.6], [14.0, 13.1, 6.8, 9.9, 9.3], [1.0, -1.0, 2.0, 0.0, 2.0, -3.5],
    [-4.6, 2.2, 0.3, -1.2, 0.8, -0.1, 1.9]])
def test_signed_rank_equals_brute_force(contrasts):
  result = split_test.signed_rank_over_splits(contrasts)
  p, p_other = counting.signed_rank_by_enumeration(contrasts)
  assert result.p_value == pytest.approx(p)
  assert result.p_other == pytest.approx(p_other)


def test_a_split_whose_pairs_move_together_counts_once():
  # Three pairs on three splits, every pair ordering the splits alike: as pair x split
  # differences the old stratified test sees 9 agreeing signs (p = 1/512); with the split
  # as the unit there are 3 (p = 1/8, the least three splits can give).
  pairs = [[66.1, 7.0, 5.3], [15.1, 11.1, 10.2], [8.6, 4.8, 2.5]]
  assert paired_test.sign_flip_test(pairs).p_value == 1 / 512
  per_split = [split_test.contrast({'a': 1 / 3, 'b': 1 / 3, 'c': 1 / 3},
                                   {'a': pairs[0][s], 'b': pairs[1][s], 'c': pairs[2][s]})
               for s in range(3)]
  assert per_split == pytest.approx([29.933333, 7.633333, 6.0])
  result = split_test.signed_rank_over_splits(per_split)
  assert (result.p_value, result.n) == (1 / 8, 3)


def test_contrast():
  weights = {'bc_f': 1, 'bc_fneg': -1, 'pe_f': -1, 'pe_fneg': 1}
  values = {'bc_f': 36.1, 'bc_fneg': 22.63, 'pe_f': 22.34, 'pe_fneg': 22.91}
  assert split_test.contrast(weights, values) == pytest.approx(14.04)
  assert split_test.contrast(weights, {**values, 'pe_f': None}) is None
  assert split_test.contrast(weights, {'bc_f': 1.0}) is None


def _within_brute_force(splits):
  """P over every relabelling: in each split the higher label on each cell alike."""
  def rank_of(values, i):
    return sum(v < values[i] for v in values) + (sum(v == values[i] for v in values) + 1) / 2
  observed = sum(rank_of(values, 0) for values in splits)
  totals = [sum(rank_of(values, i) for values, i in zip(splits, choice))
            for choice in itertools.product(*(range(len(v)) for v in splits))]
  return (np.mean([t >= observed - 1e-9 for t in totals]),
          np.mean([t <= observed + 1e-9 for t in totals]))


@pytest.mark.parametrize('splits', [
    [[29.0, 22.4, 21.1, 20.6, 20.5, 24.2], [27.5, 24.9, 24.0, 25.7, 27.1, 27.4],
     [32.3, 26.2, 25.3, 25.5, 24.2, 27.7], [30.6, 29.8, 29.4], [30.3, 31.2, 29.9]],
    [[1.0, 1.0, 2.0], [3.0, 1.0], [2.0, 5.0, 2.0, 0.0]],  # Ties.
])
def test_rank_within_splits_equals_brute_force(splits):
  result = split_test.rank_within_splits(splits)
  p, p_other = _within_brute_force(splits)
  assert result.p_value == pytest.approx(p)
  assert result.p_other == pytest.approx(p_other)


def test_rank_within_splits_of_two_cells_is_the_sign_test():
  splits = [[30.0 + s, 20.0] for s in range(6)]
  assert split_test.rank_within_splits(splits).p_value == pytest.approx(1 / 64)
  splits[2] = [10.0, 20.0]
  # 5 of 6 in the paper's direction: P(at least 5 of 6 signs) = 7/64.
  assert split_test.rank_within_splits(splits).p_value == pytest.approx(7 / 64)


# The exploratory batch-norm family: batch norm against five other Fisher critics, two of
# them on splits 0-4 and three on splits 0-2, every pair sharing batch norm's run of its split.
BATCH_NORM_LAYOUT = (5, 3, 3, 3, 5)


def _simulated_rejections(rng, replicates, level):
  """Rejection rates at `level` of the pair test and the within-split test on data with no
  effect: every run of a split its split's level plus its own noise."""
  old = new = 0
  for _ in range(replicates):
    split_level = rng.normal(0.0, 3.0, size=5)
    batch_norm = split_level + rng.normal(size=5)
    others = [split_level[:n] + rng.normal(size=n) for n in BATCH_NORM_LAYOUT]
    strata = [list(batch_norm[:n] - other) for n, other in zip(BATCH_NORM_LAYOUT, others)]
    old += paired_test.sign_flip_test(strata).p_value < level
    splits = [[batch_norm[s]] + [other[s] for other in others if s < len(other)]
              for s in range(5)]
    new += split_test.rank_within_splits(splits).p_value < level
  return old / replicates, new / replicates


def test_on_a_simulated_null_only_the_within_split_test_keeps_its_level():
  old, new = _simulated_rejections(np.random.default_rng(0), 2000, 0.05)
  # 2,000 replicates: a rate's standard error is ~0.5 points at 5%.
  assert new <= 0.05
  assert old > 0.08  # The pair test, each pair's sign flipped alone, rejects too often.


def test_fixed_sequence():
  def result(p, p_other=1.0):
    return split_test.SplitTestResult(0.0, p, p_other, 6, 1 / 64)
  steps = split_test.fixed_sequence([('3', result(1 / 64)), ('2', result(0.2)),
                                     ('1', result(1 / 64))])
  assert [s.word for s in steps] == [paired_test.SUPPORTED, paired_test.NOT_SHOWN,
                                     split_test.NOT_TESTED]
  assert steps[2].p_value == 1 / 64
  steps = split_test.fixed_sequence([('3', result(0.9, 1 / 64)), ('2', result(1 / 64))])
  assert [s.word for s in steps] == [paired_test.CONTRADICTED, split_test.NOT_TESTED]
  # A family not tested yet holds the ones after it: they wait, they are not stopped.
  steps = split_test.fixed_sequence([('3', None), ('2', result(1 / 64)), ('1', result(0.5))])
  assert [s.word for s in steps] == [split_test.NO_RUNS, split_test.WAITING,
                                     split_test.WAITING]
  steps = split_test.fixed_sequence([('3', result(1 / 64)), ('2', None), ('1', result(1 / 64))])
  assert [s.word for s in steps] == [paired_test.SUPPORTED, split_test.NO_RUNS,
                                     split_test.WAITING]
  # Once the sequence has stopped, a family without runs does not make the later ones wait.
  steps = split_test.fixed_sequence([('3', result(0.2)), ('2', None), ('1', result(1 / 64))])
  assert [s.word for s in steps] == [paired_test.NOT_SHOWN, split_test.NO_RUNS,
                                     split_test.NOT_TESTED]


def test_scipys_permutation_test_equals_the_convolution_of_the_sign_flips():
  """signed_rank_over_splits (scipy.stats.permutation_test) against paired_test's exact
  convolution of one stratum, on contrasts with ties, zeros and float noise: equal p values."""
  rng = np.random.default_rng(0)
  for n in (1, 3, 6, 8, 10):
    for _ in range(20):
      contrasts = list(rng.choice([-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 2.0 + 1e-12, 7.5], n))
      ours = split_test.signed_rank_over_splits(contrasts)
      convolved = paired_test.sign_flip_test([contrasts])
      assert ours.p_value == pytest.approx(convolved.p_value, abs=1e-12)
      assert ours.p_other == pytest.approx(convolved.p_other, abs=1e-12)
      assert ours.statistic == pytest.approx(convolved.statistic, abs=1e-12)
      assert ours.smallest_p == convolved.smallest_p


def test_without_ties_or_zeros_it_is_scipys_exact_wilcoxon():
  from scipy import stats  # pylint: disable=g-import-not-at-top
  for contrasts in ([9.9, 7.75, 40.6], [8.5, 10.3, 13.4, 10.6, 9.5, 9.9],
                    [0.2, 1.1, -0.9, 0.15, -0.3, 0.1]):
    result = split_test.signed_rank_over_splits(contrasts)
    for alternative, p in (('greater', result.p_value), ('less', result.p_other)):
      exact = stats.wilcoxon(contrasts, alternative=alternative, method='exact').pvalue
      assert p == pytest.approx(exact, abs=1e-12)
