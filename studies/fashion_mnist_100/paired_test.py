"""The primary test of docs/results/protocol.md: paired differences, exactly.

A family is a list of strata (one per pair of cells), each a list of paired differences
d = higher − lower, one per seed. Under no effect a seed's two runs are exchangeable, so
every d keeps its size and flips its sign with probability ½, independently.

- `sign_flip_test`: the stratified signed-rank statistic
      T = Σ_k Σ_i sign(d_ki) · R_ki / (n_k + 1),
  R_ki the mid-rank of |d_ki| among stratum k's n_k differences (a zero difference is
  ranked and counts 0), and its exact one-sided p values in both directions over all 2^N
  sign patterns, computed as a convolution of two-point distributions on an integer grid
  (no sampling).
- `hodges_lehmann`: the median of the Walsh averages (d_i + d_j)/2, i ≤ j, with the exact
  signed-rank interval [W_(k), W_(M+1−k)] at ≥ 95% coverage, or [min d, max d] with its
  exact coverage 1 − 2^(1−n) where no k reaches 95% (n ≤ 5).
- `holm`: Holm's step-down adjustment of several p values.
"""
import dataclasses
import fractions
import math
from typing import List, Sequence

import numpy as np

from tf_ipmssl.sweep import paper_comparison

LEVEL = 0.05


def rounded(d: float) -> float:
  """Differences of errors printed to 2 decimals: equal up to float noise means tied."""
  return round(d, 9)


def scores(strata: Sequence[Sequence[float]]) -> List[List[fractions.Fraction]]:
  """Per stratum and difference, its unsigned weight R / (n + 1) (exact fractions); the
  statistic adds it with the difference's sign."""
  found = []
  for diffs in strata:
    sizes = [abs(rounded(d)) for d in diffs]
    found.append([fractions.Fraction(r).limit_denominator(2) / (len(diffs) + 1)
                  for r in paper_comparison.average_ranks(sizes)])
  return found


@dataclasses.dataclass(frozen=True)
class SignFlipResult:
  statistic: float  # T observed.
  p_value: float  # P(T ≥ T observed): small when the differences are positive.
  p_other: float  # P(T ≤ T observed): small when they are negative.
  n: int  # Paired differences in all.
  smallest_p: float  # The least p the n differences can give (2^−n without zeros).


def sign_flip_test(strata: Sequence[Sequence[float]]) -> SignFlipResult:
  """The exact stratified sign-flip test of the module doc (strata: differences per pair)."""
  weights, signs = [], []
  for diffs, stratum_scores in zip(strata, scores(strata)):
    for d, w in zip(diffs, stratum_scores):
      d = rounded(d)
      if d != 0:  # A zero difference counts 0 under every sign.
        weights.append(w)
        signs.append(1 if d > 0 else -1)
  n = sum(len(s) for s in strata)
  if not weights:
    return SignFlipResult(0.0, 1.0, 1.0, n, 1.0)
  scale = math.lcm(*(w.denominator for w in weights))
  integer = [int(w * scale) for w in weights]
  observed = sum(s * w for s, w in zip(signs, integer))
  # The distribution of Σ ±w_i: counts on the grid −total..total.
  total = sum(integer)
  counts = np.zeros(2 * total + 1)
  counts[total] = 1.0
  for w in integer:
    counts = np.roll(counts, w) + np.roll(counts, -w)  # Never wraps: |Σ| ≤ total.
  counts /= counts.sum()
  index = observed + total
  return SignFlipResult(statistic=float(fractions.Fraction(observed, scale)),
                        p_value=float(counts[index:].sum()),
                        p_other=float(counts[:index + 1].sum()), n=n,
                        smallest_p=2.0 ** -len(weights))


def signed_rank_null(n: int) -> np.ndarray:
  """P(W⁺ = w), w = 0..n(n+1)/2: the signed-rank statistic of n untied, non-zero
  differences under no effect."""
  top = n * (n + 1) // 2
  counts = np.zeros(top + 1)
  counts[0] = 1.0
  for rank in range(1, n + 1):
    shifted = np.zeros_like(counts)
    shifted[rank:] = counts[:-rank]
    counts = counts + shifted
  return counts / counts.sum()


@dataclasses.dataclass(frozen=True)
class Interval:
  estimate: float  # Hodges–Lehmann: the median of the Walsh averages.
  low: float
  high: float
  coverage: float  # Its exact coverage under the signed-rank model.

  @property
  def text(self) -> str:
    """'+2.1 [−0.6, +4.3] (95%)': the estimate, the interval and its coverage; '96.1%'
    where the attainable coverage is not a round number."""
    return self.formatted(1)

  def formatted(self, places: int, coverage: bool = True) -> str:
    """`text` with the estimate and the bounds to `places` decimals; without the coverage
    where `coverage` is False ('+2.1 [−0.6, +4.3]')."""
    bounds = f'{self.estimate:+.{places}f} [{self.low:+.{places}f}, {self.high:+.{places}f}]'
    if not coverage:
      return bounds
    cover = f'{100 * self.coverage:.1f}'.rstrip('0').rstrip('.')
    return f'{bounds} ({cover}%)'


def walsh_averages(diffs: Sequence[float]) -> List[float]:
  return sorted((diffs[i] + diffs[j]) / 2 for i in range(len(diffs))
                for j in range(i, len(diffs)))


def hodges_lehmann(diffs: Sequence[float], confidence: float = 1 - LEVEL) -> Interval:
  """The Hodges–Lehmann estimate and its exact signed-rank interval (module doc)."""
  if not diffs:
    raise ValueError('no differences')
  walsh = walsh_averages(diffs)
  n, m = len(diffs), len(walsh)
  cumulative = np.cumsum(signed_rank_null(n))
  # Coverage of [W_(k), W_(m+1−k)] is 1 − 2·P(W⁺ ≤ k − 1); the largest k that reaches it.
  k = 0
  while k + 1 <= (m + 1) // 2 and 1 - 2 * cumulative[k] >= confidence:
    k += 1
  if k == 0:
    k, coverage = 1, 1 - 2 * cumulative[0]
  else:
    coverage = 1 - 2 * cumulative[k - 1]
  return Interval(float(np.median(walsh)), walsh[k - 1], walsh[m - k], float(coverage))


def holm(p_values: Sequence[float]) -> List[float]:
  """Holm's adjusted p values, in the input's order: the i-th smallest times (m − i + 1),
  made non-decreasing, at most 1."""
  order = sorted(range(len(p_values)), key=lambda i: p_values[i])
  adjusted = [0.0] * len(p_values)
  running = 0.0
  for position, i in enumerate(order):
    running = max(running, min(1.0, (len(p_values) - position) * p_values[i]))
    adjusted[i] = running
  return adjusted


SUPPORTED, CONTRADICTED, NOT_SHOWN = 'supported', 'contradicted', 'not shown at this n'


def word(adjusted_p: float, adjusted_p_other: float, level: float = LEVEL) -> str:
  """The protocol's word for a family from its two Holm-adjusted p values."""
  if adjusted_p < level:
    return SUPPORTED
  if adjusted_p_other < level:
    return CONTRADICTED
  return NOT_SHOWN
