"""The protocol's primary test against known answers and brute-force enumeration."""
import itertools
import math

import numpy as np
import pytest

from studies.fashion_mnist_100 import paired_test


def _brute_force(strata):
  """(T, P(T ≥ T_obs), P(T ≤ T_obs)) by listing every sign pattern, with ranks counted
  directly (#smaller + (#equal + 1) / 2)."""
  weights = []
  for diffs in strata:
    sizes = [abs(round(d, 9)) for d in diffs]
    for s in sizes:
      rank = sum(x < s for x in sizes) + (sum(x == s for x in sizes) + 1) / 2
      weights.append(0.0 if s == 0 else rank / (len(diffs) + 1))
  signs = [1 if round(d, 9) > 0 else -1 for diffs in strata for d in diffs]
  observed = sum(s * w for s, w in zip(signs, weights))
  totals = [sum(s * w for s, w in zip(pattern, weights))
            for pattern in itertools.product((1, -1), repeat=len(weights))]
  eps = 1e-9
  return (observed, np.mean([t >= observed - eps for t in totals]),
          np.mean([t <= observed + eps for t in totals]))


def test_every_sign_agrees_at_n8_gives_one_in_256():
  result = paired_test.sign_flip_test([[3.1, 0.2, 5.0, 1.1, 2.2, 0.7, 4.4, 9.9]])
  assert result.p_value == 1 / 256
  assert result.p_other == 1.0
  assert result.smallest_p == 1 / 256


def test_one_collapsed_seed_that_the_t_test_loses():
  diffs = [60.0, 2.0, 3.0, 2.5, 1.5, 2.2, 3.1, 1.9]
  # The paired t-test: t = mean / (sd / √n) below the one-sided 5% critical value of t with
  # 7 degrees of freedom, 1.895 (tables): it does not reject.
  t = np.mean(diffs) / (np.std(diffs, ddof=1) / math.sqrt(len(diffs)))
  assert t < 1.895
  assert paired_test.sign_flip_test([diffs]).p_value == 1 / 256
  # Nor does that seed, flipped, cancel the seven others: ranks 1-7 positive, 8 negative,
  # T⁺ = 28; 25 of the 256 patterns have T⁺ ≥ 28 (the subsets of 1..8 summing to ≤ 8).
  # A sign-flip test on the sum of the differences finds nothing there (p > 0.5).
  flipped = [-60.0] + diffs[1:]
  assert paired_test.sign_flip_test([flipped]).p_value == pytest.approx(25 / 256)
  sums = [sum(p * abs(d) for p, d in zip(pattern, flipped))
          for pattern in itertools.product((1, -1), repeat=8)]
  assert np.mean([s >= sum(flipped) for s in sums]) > 0.5


@pytest.mark.parametrize('strata', [
    [[66.1, 7.0, 5.3], [0.57, 0.65, -1.11], [1.55, -4.63, -1.32]],
    [[1.0, -1.0, 2.0, 0.0], [3.0, 3.0, -3.0]],  # Ties and a zero.
    [[-0.5, 2.5, 2.5, -2.5, 1.0], [4.0, -4.0]],
])
def test_exact_distribution_equals_brute_force(strata):
  result = paired_test.sign_flip_test(strata)
  observed, p, p_other = _brute_force(strata)
  assert result.statistic == pytest.approx(observed)
  assert result.p_value == pytest.approx(p)
  assert result.p_other == pytest.approx(p_other)


def test_a_constructed_null_rejects_at_most_its_level():
  """Every sign pattern of fixed sizes is equally likely under no effect: the share of
  patterns with p ≤ 0.05 is at most 0.05 (an exact test), and near it."""
  sizes = [[0.3, 1.7, 2.2, 4.0, 0.9], [1.1, 2.9, 0.4, 3.3]]
  flat = [s for stratum in sizes for s in stratum]
  rejected = 0
  patterns = list(itertools.product((1, -1), repeat=len(flat)))
  for pattern in patterns:
    signed = [p * s for p, s in zip(pattern, flat)]
    strata = [signed[:5], signed[5:]]
    rejected += paired_test.sign_flip_test(strata).p_value <= 0.05
  share = rejected / len(patterns)
  assert share <= 0.05
  assert share > 0.03


def test_symmetric_differences_are_not_shown():
  result = paired_test.sign_flip_test([[1.0, -1.0, 2.0, -2.0], [0.5, -0.5]])
  assert result.p_value > 0.5 and result.p_other > 0.5


def test_hodges_lehmann_known_answers():
  interval = paired_test.hodges_lehmann([1, 2, 3, 4, 5, 6, 7, 8])
  # 36 Walsh averages; P(W+ ≤ 3) = 5/256 at n = 8, so k = 4: coverage 1 − 10/256.
  assert interval.estimate == 4.5
  assert (interval.low, interval.high) == (2.0, 7.0)
  assert interval.coverage == pytest.approx(1 - 10 / 256)
  small = paired_test.hodges_lehmann([66.1, 7.0, 5.3])
  # Walsh averages 5.3, 6.15, 7.0, 35.7, 36.55, 66.1: median (7.0 + 35.7) / 2.
  assert small.estimate == pytest.approx(21.35)
  assert (small.low, small.high, small.coverage) == (5.3, 66.1, 0.75)
  assert paired_test.hodges_lehmann([1, 2, 3, 4, 5]).coverage == pytest.approx(0.9375)


def test_hodges_lehmann_coverage_by_enumeration():
  """The interval's coverage equals the share of sign patterns (about the true shift 0)
  whose interval contains 0."""
  sizes = [0.4, 1.3, 2.1, 2.8, 3.6, 5.2]
  covered = []
  for pattern in itertools.product((1, -1), repeat=len(sizes)):
    interval = paired_test.hodges_lehmann([p * s for p, s in zip(pattern, sizes)])
    covered.append(interval.low <= 0 <= interval.high)
  assert np.mean(covered) == pytest.approx(interval.coverage)


def test_signed_rank_null_known_values():
  null = paired_test.signed_rank_null(3)  # Subsets of {1, 2, 3} by sum.
  assert list(null * 8) == [1, 1, 1, 2, 1, 1, 1]


def test_holm_known_answer():
  assert paired_test.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
  assert paired_test.holm([0.5, 0.9]) == [1.0, 1.0]


def test_words():
  assert paired_test.word(0.01, 1.0) == paired_test.SUPPORTED
  assert paired_test.word(0.9, 0.02) == paired_test.CONTRADICTED
  assert paired_test.word(0.06, 0.9) == paired_test.NOT_SHOWN


def test_the_stratified_convolution_equals_scipys_permutation_test():
  """The within-stratum ranks are fixed under sign flips, so the stratified statistic is
  Σ sign(d_i)·w_i with fixed weights: scipy.stats.permutation_test over all sign patterns
  gives the convolution's p values."""
  from scipy import stats  # pylint: disable=g-import-not-at-top
  for strata in ([[66.1, 7.0, 5.3], [0.57, 0.65, -1.11], [1.55, -4.63, -1.32]],
                 [[1.0, -1.0, 2.0, 0.0], [3.0, 3.0, -3.0]],
                 [[-0.5, 2.5, 2.5, -2.5, 1.0], [4.0, -4.0]]):
    weights = np.array([float(w) for stratum in paired_test.scores(strata) for w in stratum])
    d = np.array([paired_test.rounded(x) for stratum in strata for x in stratum])
    def statistic(x, axis):
      return np.sum(np.sign(x) * weights, axis=axis)
    result = paired_test.sign_flip_test(strata)
    for alternative, p in (('greater', result.p_value), ('less', result.p_other)):
      permuted = stats.permutation_test((d,), statistic, permutation_type='samples',
                                        n_resamples=np.inf, vectorized=True,
                                        alternative=alternative).pvalue
      assert p == pytest.approx(permuted, abs=1e-12)


def test_an_intervals_text_at_any_decimals_with_or_without_its_coverage():
  """3..10: the median Walsh average 6.5; at n = 8 the exact interval is the 4th smallest and
  largest Walsh average, 4.0 and 9.0 (P(W+ <= 3) = 5/256: coverage 1 - 10/256 = 96.1%)."""
  interval = paired_test.hodges_lehmann([3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.95)
  assert interval.formatted(1) == interval.text == '+6.5 [+4.0, +9.0] (96.1%)'
  assert interval.formatted(3) == '+6.500 [+4.000, +9.000] (96.1%)'
  assert interval.formatted(1, coverage=False) == '+6.5 [+4.0, +9.0]'
