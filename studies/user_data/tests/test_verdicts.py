"""The study's verdicts on synthetic records whose contrasts are known: each endpoint read as
the page defines it, the exact p against a count over all 2^8 sign patterns, Holm by hand,
the words, and the page's results part."""

import numpy as np
import pytest

from studies.tests import counting
from studies.user_data import plan as plan_lib
from studies.user_data import verdicts
from studies.user_data.tests.synthetic import K_PLUS_1, SUPERVISED
from studies.user_data.tests.synthetic import edited_copy
from tests import test_wording
from studies.user_data.tests.synthetic import write_run as _write_run


def test_the_subset_step_is_the_earliest_lowest():
  curves = {verdicts.SUBSET_TAG: {50: 30.0, 100: 20.0, 150: 20.0, 200: 25.0}}
  assert verdicts.subset_step(curves) == 100
  assert verdicts.subset_step({}) is None


def test_each_endpoint_is_read_from_the_record(tmp_path):
  model_dir = str(tmp_path / 'run')
  _write_run(model_dir, 21.5, 21.25, {'critic': 0.625, 'softmax': 0.5},
             {verdicts.SUBSET_TAG: {50: 40.0, 100: 30.0, 150: 30.0},
              verdicts.TEST_TAG: {50: 24.0, 100: 22.0, 150: 21.0}})
  assert verdicts.endpoint(model_dir, 'test error') == 21.5
  assert verdicts.endpoint(model_dir, 'balanced test error') == 21.25
  assert verdicts.endpoint(model_dir, "test error at the subset's step") == 22.0
  # A rate the event file rounds to float32 is read back as the rate of its count (of the
  # 8,000 test images of the confusion matrix): 2,667 wrong.
  other = str(tmp_path / 'rounded')
  rate = 100 * 2667 / 8000
  _write_run(other, rate, curves={verdicts.SUBSET_TAG: {50: 1.0},
                                  verdicts.TEST_TAG: {50: rate}})
  assert float(np.float32(rate)) != rate
  assert verdicts.endpoint(other, "test error at the subset's step") == rate
  assert verdicts.endpoint(model_dir, 'auroc critic') == 0.625
  assert verdicts.endpoint(model_dir, 'auroc softmax') == 0.5
  assert verdicts.endpoint(str(tmp_path / 'none'), 'test error') is None


# Per question, the contrast of each split 30..37 the synthetic records give.
IMBALANCE = [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]  # Every split: supported.
MISMATCH = [-1.0, 2.0, 3.0, -4.0, 5.0, 6.0, -7.0, 8.0]  # Mixed: not shown.
COST = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]
SELECTION = [-0.25, -1.25, -2.25, -3.25, -4.25, -5.25, -6.25, -7.25]  # Contradicted.
CHANCE = [0.125, 0.25, 0.0625, 0.1875, 0.3125, 0.375, 0.4375, 0.03125]


def _holm_by_hand(p):
  """Holm over the six p: sorted, the i-th times (6 − i), running maximum."""
  running, adjusted = 0.0, {}
  for i, q in enumerate(sorted(p, key=p.get)):
    running = max(running, min(1.0, (6 - i) * p[q]))
    adjusted[q] = running
  return adjusted


@pytest.fixture(scope='module')
def records(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('records'))
  for i, seed in enumerate(range(30, 38)):
    def run(part, cell, **kw):
      _write_run(plan_lib.record_dir(root, part, cell, seed), **kw)
    run('imbalanced', SUPERVISED, test_error=40.0, balanced=40.0 + IMBALANCE[i])
    run('imbalanced', K_PLUS_1, test_error=30.0, balanced=40.0,
        cpu='CPU B' if seed == 33 else 'CPU A')
    k0 = 20.0
    k100 = k0 + COST[i]
    run('six_known_0', K_PLUS_1, test_error=k0, aurocs={'critic': 0.5 + CHANCE[i]})
    run('six_known_100', K_PLUS_1, test_error=k100)
    run('six_known_0', SUPERVISED, test_error=k100 + MISMATCH[i],
        aurocs={'softmax': 0.5 + CHANCE[i] - 0.01 * (i + 1)})
    run('balanced', K_PLUS_1, test_error=25.0,
        curves={verdicts.SUBSET_TAG: {50: 10.0, 100: 5.0},
                verdicts.TEST_TAG: {50: 25.0 + SELECTION[i], 100: 25.0 + SELECTION[i]}})
    run('balanced', SUPERVISED, test_error=30.0)
  return root


def test_the_contrasts_and_words_follow_the_page(records):
  plan = plan_lib.read_plan()
  results = {r.question: r for r in verdicts.judge(plan, records)}
  expected = {'imbalance': IMBALANCE, 'mismatch': MISMATCH, 'mismatch_cost': COST,
              'selection': SELECTION, 'score_vs_chance': CHANCE,
              'score_vs_softmax': [0.01 * (i + 1) for i in range(8)]}
  for question, d in expected.items():
    np.testing.assert_allclose(list(results[question].contrasts.values()), d, atol=1e-12,
                               err_msg=question)
  p = {q: counting.signed_rank_by_enumeration(d)[0] for q, d in expected.items()}
  for question, r in results.items():
    assert r.test.p_value == pytest.approx(p[question]), question
  adjusted = _holm_by_hand(p)
  for question, r in results.items():
    assert r.adjusted == pytest.approx(adjusted[question]), question
  # And the other way: p' counted over the sign patterns of -d.
  p_other = {q: counting.signed_rank_by_enumeration(d)[1] for q, d in expected.items()}
  adjusted_other = _holm_by_hand(p_other)
  for question, r in results.items():
    assert r.test.p_other == pytest.approx(p_other[question]), question
    assert r.adjusted_other == pytest.approx(adjusted_other[question]), question
  assert p['imbalance'] == 1 / 256
  words = {q: r.word for q, r in results.items()}
  assert words == {'imbalance': 'supported', 'mismatch': 'not shown at this n',
                   'mismatch_cost': 'supported', 'selection': 'contradicted',
                   'score_vs_chance': 'supported', 'score_vs_softmax': 'supported'}
  assert results['imbalance'].mixed_cpu_splits == (33,)
  assert results['imbalance'].cpus[33] == ('CPU A', 'CPU B')
  assert results['selection'].mixed_cpu_splits == ()


def test_the_results_part_says_what_the_records_show(records):
  plan = plan_lib.read_plan()
  text = verdicts.results_part(plan, records)
  assert text.startswith('56 of 56 runs recorded.')
  assert '| imbalance | 8 | **supported** | 0.0039 (0.0234) |' in text
  assert '| mismatch | 8 | **not shown at this n** |' in text
  # Hodges-Lehmann of 3..10: the median Walsh average 6.5; at n = 8 the exact interval is the
  # 4th smallest and largest Walsh average (P(W+ <= 3) = 5/256: coverage 1 - 10/256).
  assert '| +6.5 [+4.0, +9.0] (96.1%) |' in text
  assert '| +0.045 [+0.020, +0.070] (96.1%) |' in text  # AUROC: 0.01..0.08, 3 decimals.
  assert ('- imbalance: splits 33 trained on more than one CPU; without them n = 7, '
          'p = 0.0078 (unadjusted)') in text


def test_an_incomplete_sweep_shows_contrasts_without_words(records, tmp_path):
  import shutil  # pylint: disable=g-import-not-at-top
  partial = str(tmp_path / 'partial')
  shutil.copytree(records, partial)
  shutil.rmtree(plan_lib.record_dir(partial, 'imbalanced', K_PLUS_1, 37))
  plan = plan_lib.read_plan()
  results = verdicts.judge(plan, partial)
  assert all(r.word is None for r in results)
  text = verdicts.results_part(plan, partial)
  assert text.startswith('55 of 56 runs recorded.')
  assert '| imbalance | 7 of 8 | not yet tested |' in text
  assert verdicts.results_part(plan, str(tmp_path / 'empty')) == 'No record yet.'


def test_readme_says_each_claim_with_its_word_once_all_runs_are_in(records, tmp_path):
  plan = plan_lib.read_plan()
  assert set(verdicts.CLAIMS) == set(plan.questions)
  lines = verdicts.readme_lines(plan, records).splitlines()
  assert len(lines) == 6
  assert lines[0] == (
      '- With imbalanced labels (ratio 10; unlabeled images cut to the same profile, the step '
      'still chosen on 5,000 validation images), K+1 below the supervised critic '
      '(class-averaged test error): **supported** (n=8 splits, Holm-adjusted p=0.0234; '
      '+6.5 [+4.0, +9.0] points)')
  # Contradicted: the p that decides it is the other way's (Holm by hand: 1/256 · 6); the
  # estimate -3.75 ± 2.5 (the 4th Walsh averages from either end), printed to 1 decimal.
  assert lines[3].endswith('**contradicted** (n=8 splits, Holm-adjusted p the other way=0.0234; '
                           '-3.8 [-6.2, -1.2] points)')
  assert lines[5].endswith('+0.045 [+0.020, +0.070] AUROC)')
  # README's screen rule (tests/test_wording.py): at most 10 numbers a reader sees per item.
  for line in lines:
    assert len(test_wording._prose_numbers(line)) <= 10, line  # pylint: disable=protected-access
  import shutil  # pylint: disable=g-import-not-at-top
  partial = str(tmp_path / 'partial')
  shutil.copytree(records, partial)
  shutil.rmtree(plan_lib.record_dir(partial, 'imbalanced', K_PLUS_1, 30))
  assert verdicts.readme_lines(plan, partial) == (
      '- Under way: 55 of 56 runs recorded; no question is tested until every contrast is in.')


def test_a_zero_and_ties_are_counted_as_the_page_says(records, tmp_path):
  plan = plan_lib.read_plan()
  # imbalance: a zero on split 30 and a tie (+4, +4) on splits 31 and 32.
  d = [0.0, 4.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0]
  zeros = edited_copy(records, tmp_path / 'zeros', [
      ('imbalanced', SUPERVISED, seed,
       lambda m, x=x: m['best'].update(test_balanced_error=40.0 + x))
      for seed, x in zip(range(30, 38), d)])
  results = {r.question: r for r in verdicts.judge(plan, zeros)}
  r = results['imbalance']
  assert r.zero_splits == (30,)
  assert r.test.p_value == pytest.approx(counting.signed_rank_by_enumeration(d)[0])
  assert r.test.p_value == pytest.approx(2 / 256)  # Each zero halves the least p.
  assert 'Contrasts of exactly 0 (each halves the least p the test can give): imbalance on ' \
         'split(s) 30.' in verdicts.results_part(plan, zeros)


def test_a_recorded_run_without_an_endpoint_is_named(records, tmp_path):
  plan = plan_lib.read_plan()
  lacking = edited_copy(records, tmp_path / 'lacking', [
      ('imbalanced', K_PLUS_1, 34, lambda m: m['best'].update(test_balanced_error=float('nan')))])
  assert verdicts.endpoint(plan_lib.record_dir(lacking, 'imbalanced', K_PLUS_1, 34),
                           'balanced test error') is None
  named = f'imbalanced {K_PLUS_1} seed 34: balanced test error'
  assert verdicts.lacking(plan, lacking) == [named]
  assert verdicts.readme_lines(plan, lacking) == (
      '- Under way: 56 of 56 runs recorded; no question is tested until every contrast is in '
      f'(recorded without an endpoint: {named}).')
  assert named in verdicts.results_part(plan, lacking)
