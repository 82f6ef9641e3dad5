"""Tests whose unit is the label split (docs/results/confirmation.md).

A seed fixes a run's label split, initialization and noise, and every cell of a family
shares it: the cells of one split move together (an easy split is easy for every cell). So a
split gives a family one number, and n counts splits.

- `contrast`: a family's number on one split, d_s = Σ_c w_c · x_{c,s}, from its cells'
  values and weights.
- `signed_rank_over_splits`: the exact one-sided Wilcoxon signed-rank test of the splits'
  contrasts, W = Σ_s sign(d_s) · R_s (R_s the mid-rank of |d_s|, a zero counts 0), over all
  2^S sign patterns. Valid where a family's cells are disjoint runs on a split: under no
  effect the runs a contrast pairs are exchangeable, and swapping every pair of a split at
  once flips the sign of d_s, independently from split to split.
- `rank_within_splits`: where one run stands against several others of its split (the
  batch-norm critic against each other normalization on the same split), a pair's sign
  flip alone matches no relabelling of the runs. The exact test permutes the cell labels
  within each split: the statistic is Σ_s (the mid-rank of the `higher` cell's value among
  its split's values), whose null distribution is that of a sum of independent draws, one
  per split, uniform over that split's mid-ranks.

Both are rank tests: one collapsed run (a run at 90%) moves its split by at most one rank
and can neither carry a family alone nor cancel it alone.
"""
import dataclasses
import fractions
import math
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np
from scipy import stats

from studies.fashion_mnist_100 import paired_test
from tf_ipmssl.sweep import paper_comparison


def contrast(weights: Mapping[str, float], values: Mapping[str, Optional[float]]
             ) -> Optional[float]:
  """Σ_c w_c · x_c over the cells of `weights`; None where a cell has no value."""
  if any(values.get(cell) is None for cell in weights):
    return None
  return sum(w * values[cell] for cell, w in weights.items())


@dataclasses.dataclass(frozen=True)
class SplitTestResult:
  statistic: float
  p_value: float  # P(statistic ≥ observed): small in the paper's direction.
  p_other: float  # P(statistic ≤ observed): small the other way.
  n: int  # Label splits.
  smallest_p: float  # The least p these splits can give.


def _signed_ranks(d: np.ndarray, axis: int = -1) -> np.ndarray:
  """W = Σ sign(d) · R, R the mid-rank of |d| (a zero ranked, counting 0), along `axis`."""
  return np.sum(np.sign(d) * stats.rankdata(np.abs(d), axis=axis), axis=axis)


def signed_rank_over_splits(contrasts: Sequence[float]) -> SplitTestResult:
  """The exact one-sided Wilcoxon signed-rank test of one contrast per split (module doc),
  by scipy.stats.permutation_test over all 2^S sign patterns (`samples` flips each
  contrast's sign; ties and zeros kept, which scipy.stats.wilcoxon's exact method does not
  take). The statistic is W / (S + 1), paired_test's scaling of the same ranks; contrasts
  equal to 1e-9 are tied (paired_test.rounded)."""
  if not contrasts:
    raise ValueError('no splits')
  d = np.array([paired_test.rounded(c) for c in contrasts])
  if len(d) == 1:  # Two sign patterns, which scipy does not take as a sample.
    return SplitTestResult(float(np.sign(d[0])) / 2, 0.5 if d[0] > 0 else 1.0,
                           0.5 if d[0] < 0 else 1.0, 1, 0.5 if d[0] else 1.0)
  p = {alternative: float(stats.permutation_test(
      (d,), _signed_ranks, permutation_type='samples', n_resamples=np.inf, vectorized=True,
      alternative=alternative).pvalue) for alternative in ('greater', 'less')}
  return SplitTestResult(float(_signed_ranks(d)) / (len(d) + 1), p['greater'], p['less'],
                         len(d), 2.0 ** -int(np.count_nonzero(d)))


def _grid(values: Sequence[fractions.Fraction]) -> Tuple[int, Sequence[int]]:
  scale = math.lcm(*(v.denominator for v in values))
  return scale, [int(v * scale) for v in values]


def rank_within_splits(splits: Sequence[Sequence[float]]) -> SplitTestResult:
  """The exact permutation test of the module doc. Each split is (the `higher` cell's value,
  the other cells' values...) with at least one other; the statistic is the sum over splits
  of the higher cell's mid-rank among its split's values (rank 1 the lowest)."""
  if not splits:
    raise ValueError('no splits')
  per_split = []
  for values in splits:
    if len(values) < 2:
      raise ValueError(f'a split needs the higher cell and another: {values}')
    ranks = paper_comparison.average_ranks([paired_test.rounded(v) for v in values])
    per_split.append([fractions.Fraction(r).limit_denominator(2) for r in ranks])
  scale, _ = _grid([r for ranks in per_split for r in ranks])
  observed = sum(int(ranks[0] * scale) for ranks in per_split)
  # The null: each split's higher label on each of its cells alike; convolve the splits.
  distribution: Dict[int, float] = {0: 1.0}
  for ranks in per_split:
    step: Dict[int, float] = {}
    for total, p in distribution.items():
      for r in ranks:
        key = total + int(r * scale)
        step[key] = step.get(key, 0.0) + p / len(ranks)
    distribution = step
  p_value = sum(p for total, p in distribution.items() if total >= observed)
  p_other = sum(p for total, p in distribution.items() if total <= observed)
  smallest = float(np.prod([1 / len(ranks) for ranks in per_split]))
  return SplitTestResult(observed / scale, min(1.0, p_value), min(1.0, p_other),
                         len(splits), smallest)


@dataclasses.dataclass(frozen=True)
class SequenceStep:
  """One family's place in a fixed sequence of tests."""
  family: str
  word: str  # paired_test's words, NOT_TESTED, WAITING or NO_RUNS.
  p_value: Optional[float]


NOT_TESTED = 'not tested (the sequence stopped)'
# A family whose runs are in while one before it still waits for its own.
WAITING = 'waiting for the families before it in the sequence'
NO_RUNS = 'no runs yet'


def fixed_sequence(ordered: Sequence[Tuple[str, Optional[SplitTestResult]]],
                   level: float = paired_test.LEVEL) -> Tuple[SequenceStep, ...]:
  """Each family in order tested at `level` while every earlier one was supported; the
  first one not supported ends the sequence, and those after it are not tested. A family
  without its runs (None) is not tested yet, and those after it wait for it (WAITING):
  the sequence decides nothing past a family it has not tested. Contradicted: p < level the
  other way, at its place in the sequence."""
  steps, state = [], 'going'
  for family, result in ordered:
    if result is None:
      steps.append(SequenceStep(family, NO_RUNS, None))
      if state == 'going':
        state = 'waiting'
      continue
    if state != 'going':
      steps.append(SequenceStep(family, WAITING if state == 'waiting' else NOT_TESTED,
                                result.p_value))
      continue
    word = paired_test.word(result.p_value, result.p_other, level)
    steps.append(SequenceStep(family, word, result.p_value))
    if word != paired_test.SUPPORTED:
      state = 'stopped'
  return tuple(steps)
