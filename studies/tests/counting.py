"""A count the studies' tests check their statistics against, written apart from the studies'
code: the exact signed-rank p values, by enumerating every sign pattern."""
import itertools

import numpy as np


def signed_rank_by_enumeration(contrasts):
  """(P(W ≥ W observed), P(W ≤ W observed)) over all 2^n sign patterns of the contrasts,
  where W = Σ sign × rank: ranks of |contrast| among all n (ties share their ranks' mean), a
  contrast of 0 adding 0 whatever its sign."""
  sizes = [abs(c) for c in contrasts]
  ranks = [sum(x < s for x in sizes) + (sum(x == s for x in sizes) + 1) / 2 for s in sizes]
  weights = [0.0 if s == 0 else r for s, r in zip(sizes, ranks)]
  observed = sum(np.sign(c) * w for c, w in zip(contrasts, weights))
  totals = [sum(p * w for p, w in zip(pattern, weights))
            for pattern in itertools.product((1, -1), repeat=len(contrasts))]
  return (np.mean([t >= observed - 1e-9 for t in totals]),
          np.mean([t <= observed + 1e-9 for t in totals]))
