"""The verdict rule: each pair on its per-seed differences, and a claim from its pairs, on
constructed cases with known answers (among them those the replaced rule got wrong)."""
import pytest

from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import claims
from tf_ipmssl.sweep import results as results_lib

GP_F, GP_FNEG, FISHER_F = 'table2/cifar10_gp_f', 'table2/cifar10_gp_fneg', 'table2/cifar10_fisher_f'


def _result(cell_id, errors_by_seed, labeled=None, final=None):
  labeled, final = labeled or {}, final or {}
  runs = tuple(results_lib.RunResult(seed=s, test_error=e, model_dir='',
                                     labeled_error=labeled.get(s),
                                     last_labeled_error=final.get(s))
               for s, e in sorted(errors_by_seed.items()))
  return results_lib.CellResult(cells_lib.get_cell(cell_id), runs)


def _pair(diffs):
  """gp_fneg − fisher_f = diffs, per seed 0, 1, ..."""
  low = _result(FISHER_F, {s: 30.0 for s in range(len(diffs))})
  high = _result(GP_FNEG, {s: 30.0 + d for s, d in enumerate(diffs)})
  return high, low


@pytest.mark.parametrize('diffs, verdict', [
    # Table 1's Fisher plain − K+1: every seed agrees.
    ((66.1, 7.0, 5.3), 'holds'),
    ((8.6, 4.8, 2.5), 'holds'),
    # One seed reversed.
    ((10.0, 10.0, -0.5), 'mixed'),
    ((-3.0, -2.0, -4.0), 'reversed'),
    # Every seed's sign but a mean under the 1-point margin; a zero has neither sign.
    ((0.5, 0.4, 0.9), 'mixed'),
    ((5.0, 0.0, 5.0), 'mixed'),
    ((-0.5, -0.4, -0.9), 'mixed'),
    # Two seeds decide nothing, however large.
    ((40.0, 41.0), 'undecided'),
    ((1.0, 2.0, 3.0, 4.0, 5.0), 'holds'),
])
def test_pair_verdicts_from_the_per_seed_signs(diffs, verdict):
  check = claims.check_pair(*_pair(diffs))
  assert check.verdict == verdict
  assert check.n == len(diffs) and check.seeds == tuple(range(len(diffs)))
  assert check.difference == pytest.approx(sum(diffs) / len(diffs))


def test_pair_text_shows_every_seed():
  check = claims.check_pair(*_pair((66.1, 7.0, 5.3)))
  assert check.text == 'gp_fneg − fisher_f: +66.1 / +7.0 / +5.3 (n=3, mean +26.1): holds'
  reverse = claims.check_pair(*reversed(_pair((66.1, 7.0, 5.3))))
  assert reverse.verdict == 'reversed' and reverse.per_seed == '-66.1 / -7.0 / -5.3'


def test_pairs_use_the_shared_seeds_only():
  high = _result(GP_FNEG, {0: 40.0, 1: 44.0, 2: 48.0, 4: 10.0})
  low = _result(FISHER_F, {0: 30.0, 1: 32.0, 2: 34.0, 3: 90.0})
  check = claims.check_pair(high, low)
  assert check.seeds == (0, 1, 2) and check.diffs == (10.0, 12.0, 14.0)
  assert check.verdict == 'holds'


def test_a_difference_between_runs_on_different_cpus_is_marked():
  def result(cell_id, errors, cpus):
    return results_lib.CellResult(cells_lib.get_cell(cell_id), tuple(
        results_lib.RunResult(seed=s, test_error=e, model_dir='', cpu=c)
        for s, (e, c) in enumerate(zip(errors, cpus))))
  # Seed 1 ran on another CPU in one cell; seed 2's CPU is not recorded in one cell, which
  # is not known to differ.
  high = result(GP_FNEG, (40.0, 41.0, 42.0), ('A', 'A', 'A'))
  low = result(FISHER_F, (30.0, 30.0, 30.0), ('A', 'B', None))
  check = claims.check_pair(high, low)
  assert check.across_cpus == (False, True, False)
  assert check.text == 'gp_fneg − fisher_f: +10.0 / +11.0† / +12.0 (n=3, mean +11.0): holds'
  # The verdict counts it like any other.
  assert check.verdict == claims.check_pair(_pair((10.0, 11.0, 12.0))[0],
                                            _pair((10.0, 11.0, 12.0))[1]).verdict
  # The labeled-set errors keep each run's CPU, so the mechanism's pairs are marked too.
  labeled = results_lib.CellResult(cells_lib.get_cell(GP_F), (results_lib.RunResult(
      seed=0, test_error=40.0, model_dir='', cpu='B', last_labeled_error=12.0),))
  assert [(r.test_error, r.cpu) for r in claims.labeled_errors(labeled).runs] == [(12.0, 'B')]


def test_the_margin():
  # Labeled-set error on 100 images: one or two images on every seed do not pass 3 points.
  assert claims.check_pair(*_pair((2.0, 2.0, 2.0)), margin=3.0).verdict == 'mixed'
  assert claims.check_pair(*_pair((2.0, 3.0, 4.0)), margin=3.0).verdict == 'holds'
  assert claims.check_pair(*_pair((2.0, 2.0, 2.0))).verdict == 'holds'


@pytest.mark.parametrize('diffs, verdict', [
    ((1.9, -0.7, 1.9), 'holds'),  # Mixed, |mean| 1.0 < 2: no difference, as the paper.
    ((1.0, 1.0, 1.5), 'leans: first higher'),  # Every seed agrees: a difference.
    ((3.0, -0.5, 4.0), 'leans: first higher'),  # Mixed, but |mean| 2.17 ≥ 2.
    ((-3.0, 0.5, -4.0), 'leans: first lower'),
    ((0.2, 0.1, 0.3), 'holds'),  # Every seed agrees but the mean is under the margin.
    ((1.0, -1.0), 'undecided'),
])
def test_no_difference_pairs(diffs, verdict):
  check = claims.check_pair(*_pair(diffs), kind=claims.NO_DIFFERENCE)
  assert check.verdict == verdict
  assert '(no difference)' in check.text


@pytest.mark.parametrize('diffs, verdict', [
    ((5.0, 6.0, 7.0), 'holds'), ((5.0, -6.0, 7.0), 'holds'), ((-0.2, -0.3, -0.1), 'holds'),
    ((-5.0, -6.0, -7.0), 'reversed'), ((-5.0, -6.0), 'undecided')])
def test_not_lower_pairs(diffs, verdict):
  assert claims.check_pair(*_pair(diffs), kind=claims.NOT_LOWER).verdict == verdict


def test_level():
  result = _result(GP_F, {0: 90.0, 1: 75.0, 2: 80.0})
  check = claims.check_level(result, 70.0)
  assert check.diffs == (20.0, 5.0, 10.0) and check.verdict == 'holds'
  assert check.text.startswith('gp_f − 70%: +20.0 / +5.0 / +10.0')
  assert claims.check_level(result, 85.0).verdict == 'mixed'
  below = claims.check_level(result, 95.0, above=False)
  assert below.diffs == (5.0, 20.0, 15.0) and below.first == '95%'


def _check(verdict, diffs=(1.0, 2.0, 3.0), first='a', second='b', kind=claims.HIGHER):
  return claims.PairCheck(first, second, tuple(range(len(diffs))), diffs, verdict, kind)


def test_claim_verdict_from_its_pairs():
  h, r, m, u = (_check(v) for v in ('holds', 'reversed', 'mixed', 'undecided'))
  lean = _check('leans: first higher', kind=claims.NO_DIFFERENCE)
  assert claims.claim_verdict([h, h]) == 'holds'
  assert claims.claim_verdict([r, r, r]) == 'reversed'
  assert claims.claim_verdict([h, r, m, m]) == 'partly: 1 of 4 hold, 1 reversed, the rest mixed'
  assert claims.claim_verdict([m, m]) == 'partly: 0 of 2 hold, 0 reversed, the rest mixed'
  assert claims.claim_verdict([h, m, lean]) == 'partly: 1 of 3 hold, 0 reversed, 1 mixed, 1 leaning'
  # An undecided pair leaves the claim undecided, also when a decided pair is reversed.
  assert claims.claim_verdict([h, u]) == 'undecided'
  assert claims.claim_verdict([r, u]) == 'undecided'
  assert claims.claim_verdict([]) == 'undecided'
  assert claims.claim_verdict([m]) == 'mixed'  # One pair: its own verdict.
  assert claims.claim_verdict([lean]) == 'leans: first higher'


def test_smallest_gap_only_over_decided_pairs():
  checks = [_check('holds', (5.0, 6.0, 7.0), 'a', 'b'),
            _check('mixed', (2.0, -1.0, 2.0), 'c', 'd'),
            _check('undecided', (-5.45,), 'e', 'f'),
            _check('holds', (0.1, 0.1, 0.1), 'g', 'h', kind=claims.NO_DIFFERENCE)]
  assert claims.summary(checks) == '3 of 4 pairs at n ≥ 3; smallest gap c − d +1.0 (n=3)'
  assert claims.summary(checks[2:3]) == '0 of 1 pairs at n ≥ 3'


def test_overall():
  assert claims.overall(['holds', 'holds']) == 'holds'
  assert claims.overall(['reversed', 'reversed']) == 'reversed'
  assert claims.overall(['holds', 'partly: 1 of 2 hold, 1 reversed, the rest mixed']) == 'partly'
  assert claims.overall(['holds', 'undecided']) == 'undecided'
  assert claims.overall([]) == 'undecided'


def test_claim_verdict_of_a_pair_and_labeled_errors():
  results = {GP_FNEG: _result(GP_FNEG, {0: 40.0, 1: 44.0, 2: 48.0},
                              labeled={0: 30.0, 1: 20.0}, final={0: 80.0, 1: 70.0, 2: 75.0}),
             FISHER_F: _result(FISHER_F, {0: 30.0, 1: 32.0, 2: 34.0},
                               labeled={0: 0.0, 1: 5.0, 2: 0.0}, final={0: 0.0, 1: 5.0, 2: 0.0})}
  check = claims.check_pair(results[GP_FNEG], results[FISHER_F])
  assert check.diffs == (10.0, 12.0, 14.0) and claims.claim_verdict([check]) == 'holds'
  final = claims.labeled_errors(results[GP_FNEG])
  assert final.errors == (80.0, 70.0, 75.0)
  best = claims.labeled_errors(results[GP_FNEG], 'best')
  assert best.errors == (30.0, 20.0) and best.seeds == (0, 1)
  check = claims.check_pair(final, claims.labeled_errors(results[FISHER_F]), margin=3.0)
  assert check.diffs == (80.0, 65.0, 75.0) and check.verdict == 'holds'


def test_short_names():
  assert claims.short_name('table1/cifar10_fisher_plain') == 'fisher_plain'
  assert claims.short_name('appendix_c/cifar10_none_4k') == 'supervised'
