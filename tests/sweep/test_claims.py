"""A claim checked pair by pair: each pair's paired verdict and the claim's, on known numbers."""
import pytest

from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import claims
from tf_ipmssl.sweep import tables as tables_lib

GP_F, GP_FNEG, FISHER_F = 'table2/cifar10_gp_f', 'table2/cifar10_gp_fneg', 'table2/cifar10_fisher_f'


def _result(cell_id, errors_by_seed, labeled=None):
  labeled = labeled or {}
  runs = tuple(tables_lib.RunResult(seed=s, test_error=e, model_dir='',
                                    labeled_error=labeled.get(s))
               for s, e in sorted(errors_by_seed.items()))
  return tables_lib.CellResult(cells_lib.get_cell(cell_id), runs)


def test_pair_verdicts_follow_the_paired_differences():
  # gp_fneg − fisher_f per seed: +10, +12, +14: mean 12, std 2 -> holds.
  high = _result(GP_FNEG, {0: 40.0, 1: 44.0, 2: 48.0})
  low = _result(FISHER_F, {0: 30.0, 1: 32.0, 2: 34.0})
  check = claims.check_pair(high, low)
  assert check.verdict == claims.HOLDS and check.difference == pytest.approx(12.0)
  assert '+12.00 ± 2.00 points (n=3 paired)' in check.text
  # Reversed: -12 ± 2 -> does not hold; +1, -1, +3 (mean 1, std 2) -> within noise.
  assert claims.check_pair(low, high).verdict == claims.DOES_NOT_HOLD
  noisy = _result(GP_F, {0: 31.0, 1: 31.0, 2: 37.0})
  assert claims.check_pair(noisy, low).verdict == claims.WITHIN_NOISE
  # One shared seed: undecided.
  assert claims.check_pair(_result(GP_F, {0: 50.0}), low).verdict == claims.UNDECIDED


def test_claim_verdict_from_its_pairs():
  def check(verdict):
    return claims.PairCheck(None, None, verdict, '')
  h, r, n, u = (check(v) for v in (claims.HOLDS, claims.DOES_NOT_HOLD, claims.WITHIN_NOISE,
                                   claims.UNDECIDED))
  assert claims.claim_verdict([h, h]) == 'holds'
  assert claims.claim_verdict([h, n]) == 'partly'
  assert claims.claim_verdict([h, r]) == 'partly'
  assert claims.claim_verdict([n, n]) == 'within noise'
  assert claims.claim_verdict([n, r]) == 'does not hold'
  assert claims.claim_verdict([h, u]) == 'undecided'
  assert claims.claim_verdict([r, u]) == 'does not hold so far'
  assert claims.claim_verdict([]) == 'undecided'
  assert claims.counts([h, h, n, u]) == '2 of 4 pairs hold, 1 within noise, 1 undecided'


def test_check_claim_and_labeled_errors():
  results = {GP_FNEG: _result(GP_FNEG, {0: 40.0, 1: 44.0, 2: 48.0}, {0: 80.0, 1: 70.0}),
             FISHER_F: _result(FISHER_F, {0: 30.0, 1: 32.0, 2: 34.0}, {0: 0.0, 1: 5.0, 2: 0.0})}
  verdict, checks = claims.check_claim(results, [(GP_FNEG, FISHER_F)])
  assert verdict == 'holds' and len(checks) == 1
  labeled = claims.labeled_errors(results[GP_FNEG])
  assert labeled.errors == (80.0, 70.0) and labeled.seeds == (0, 1)
  labeled_check = claims.check_pair(labeled, claims.labeled_errors(results[FISHER_F]))
  assert labeled_check.difference == pytest.approx(72.5)  # (80 − 0 + 70 − 5) / 2
