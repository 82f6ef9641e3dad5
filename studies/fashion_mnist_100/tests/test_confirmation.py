"""The confirmation's plan as its page fixes it, its contrasts, the sequence, and that the sweep
trains and the pages judge exactly its cells and splits."""
import os
import pathlib
import re

import pytest

from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import confirmation
from studies.fashion_mnist_100 import paired_test
from studies.fashion_mnist_100 import protocol
from studies.fashion_mnist_100 import split_test
from studies.tests import counting
from tf_ipmssl.sweep import results as results_lib

REPO = str(pathlib.Path(__file__).resolve().parents[3])  # The checkout.
RESULTS = os.path.join(REPO, 'docs', 'results')
PLAN = confirmation.read_plan(os.path.join(RESULTS, confirmation.PAGE))
PE, BC = protocol.PER_EXAMPLE, protocol.BROADCAST
F_SF, F_SFNEG = 'table2/cifar10_fisher_f_sobolev_f', 'table2/cifar10_fisher_f_sobolev_fneg'


def test_the_page_fixes_splits_families_and_weights():
  assert PLAN.seeds == (20, 21, 22, 23, 24, 25)
  assert [(f.family, f.primary, f.secondary) for f in PLAN.families] == [
      ('3', protocol.BEST, protocol.LATE), ('2', protocol.LATE, protocol.BEST),
      ('1', protocol.BEST, protocol.LATE)]
  weights = {f.family: dict(f.weights) for f in PLAN.families}
  # (3) is the interaction: the broadcast f's cost of Sobolev on f minus the per-example one.
  assert weights['3'] == {(F_SF, BC): 1, (F_SFNEG, BC): -1, (F_SF, PE): -1, (F_SFNEG, PE): 1}
  assert weights['2'] == {('table3/cifar10_batch_norm_fisher', PE): 1,
                          ('table3/cifar10_none_fisher', PE): -1}
  assert weights['1'] == {('table1/cifar10_fisher_plain', PE): 0.5,
                          ('table1/cifar10_fisher_kplus1', PE): -0.5,
                          ('table1/cifar10_sobolev_plain', PE): 0.5,
                          ('table1/cifar10_sobolev_kplus1', PE): -0.5}
  for family in PLAN.families:  # A contrast: weights that sum to 0, so a split level cancels.
    assert sum(w for _, w in family.weights) == 0
  assert len(PLAN.keys) == 10


def _script_lists():
  with open(os.path.join(REPO, 'studies', 'fashion_mnist_100', 'scripts', 'sweep_confirmation.sh')) as f:
    script = f.read()
  lists = dict(re.findall(r'^(PER_EXAMPLE|BROADCAST)=(\S+)$', script, re.MULTILINE))
  seeds = re.search(r'^for s in ([\d ]+); do$', script, re.MULTILINE).group(1).split()
  return {k: v.split(',') for k, v in lists.items()}, tuple(map(int, seeds))


def test_the_sweep_trains_exactly_the_plans_cells_and_splits():
  lists, seeds = _script_lists()
  trained = {(c, PE) for c in lists['PER_EXAMPLE']} | {(c, BC) for c in lists['BROADCAST']}
  assert trained == set(PLAN.keys)
  assert seeds == PLAN.seeds


def _observations(values, cpus=None):
  """{key: {seed: Observation}} from {key: {seed: (best-step error, late error)}}."""
  cpus = cpus or {}
  found = {}
  for key, by_seed in values.items():
    found[key] = {
        seed: protocol.Observation(
            results_lib.RunResult(seed, best, '', cpu=cpus.get((key, seed), 'cpu A')),
            late, False, 'c5b46ca') for seed, (best, late) in by_seed.items()}
  return found


def _interaction_values(seeds, broadcast_cost, per_example_cost):
  return {(F_SF, BC): {s: (30.0 + broadcast_cost + s, 31.0) for s in seeds},
          (F_SFNEG, BC): {s: (30.0 + s, 30.0) for s in seeds},
          (F_SF, PE): {s: (25.0 + per_example_cost + s, 26.0) for s in seeds},
          (F_SFNEG, PE): {s: (25.0 + s, 25.0) for s in seeds}}


def test_the_interaction_per_split():
  family = PLAN.families[0]
  observations = _observations(_interaction_values(PLAN.seeds, 10.0, 1.0))
  result = confirmation.family_result(family, protocol.BEST, PLAN.seeds, observations)
  assert result.contrasts == pytest.approx([9.0] * 6)  # (10 − 0) − (1 − 0).
  assert result.test.p_value == 1 / 64
  late = confirmation.family_result(family, protocol.LATE, PLAN.seeds, observations)
  assert late.contrasts == pytest.approx([0.0] * 6)  # (31 − 30) − (26 − 25).


def test_the_interactions_simple_differences_under_each_f():
  """(3)'s cost of Sobolev on f rather than f− under each f alone, both signed as a cost."""
  parts = dict(confirmation.simple_differences(PLAN.families[0]))
  assert dict(parts[BC].weights) == {(F_SF, BC): 1, (F_SFNEG, BC): -1}
  assert dict(parts[PE].weights) == {(F_SF, PE): 1, (F_SFNEG, PE): -1}
  assert confirmation.difference_text(parts[PE].weights) == 'Ω_F(f)+Ω_S(f) − Ω_F(f)+Ω_S(f−)'
  assert confirmation.simple_differences(PLAN.families[1]) == ()  # (2) is on one f.
  # Costs 10 (broadcast) and 1 (per-example) on every split, the interaction's 9 between.
  values = _interaction_values(PLAN.seeds, 10.0, 1.0)
  values[(F_SF, PE)][22] = (25.0 - 2.0 + 22, 26.0)  # Split 22 costs −2 per-example.
  judgement = confirmation.judge(PLAN, _observations(values))
  simple = {f: result for f, result in judgement.simple}
  assert simple[BC].contrasts == pytest.approx([10.0] * 6)
  assert simple[PE].contrasts == pytest.approx([1, 1, -2, 1, 1, 1])
  # Ranks of |d|: the five 1s share 3, the −2 has 6: W = 15 − 6 = 9. Over the 64 sign
  # patterns, W = 6k − 15 ± 6 with k of the 1s positive: W ≥ 9 with the 6 positive needs
  # k ≥ 3 (10 + 5 + 1 patterns), with it negative k = 5 (1 pattern): p = 17/64.
  assert simple[PE].test.p_value == pytest.approx(17 / 64)
  text = ' '.join(confirmation.part(judgement).split())
  assert ('(3) under the per-example f alone, Ω_F(f)+Ω_S(f) − Ω_F(f)+Ω_S(f−), best step '
          '(secondary): +1.0 (20) / +1.0 (21) / -2.0 (22)') in text
  assert '(3) under the broadcast f alone' in text


def test_a_split_missing_a_run_is_left_out_and_the_sequence_waits():
  values = _interaction_values(PLAN.seeds, 10.0, 1.0)
  del values[(F_SF, PE)][25]
  judgement = confirmation.judge(PLAN, _observations(values))
  first = judgement.primary[0]
  assert first.seeds == (20, 21, 22, 23, 24) and first.planned == 6
  # A family is tested once every planned split is in; until then no word is given.
  assert [s.word for s in judgement.steps] == ['no runs yet'] * 3
  assert confirmation.verdict_text(judgement, '3') == (
      'confirmation: 5 of 6 label splits trained')


def test_a_complete_family_waits_for_one_before_it_in_the_sequence():
  """(1) has all six splits while (3) misses one: (1) is not tested yet, and its words say
  it waits, not that the sequence stopped."""
  values = _interaction_values(PLAN.seeds, 10.0, 1.0)
  del values[(F_SF, PE)][25]
  for seed in PLAN.seeds:
    for ipm in ('fisher', 'sobolev'):
      values.setdefault((f'table1/cifar10_{ipm}_plain', PE), {})[seed] = (30.0, None)
      values.setdefault((f'table1/cifar10_{ipm}_kplus1', PE), {})[seed] = (20.0, None)
  judgement = confirmation.judge(PLAN, _observations(values))
  assert [s.word for s in judgement.steps] == [
      split_test.NO_RUNS, split_test.NO_RUNS, split_test.WAITING]
  assert confirmation.verdict_text(judgement, '1') == (
      'confirmation: 6 of 6 label splits trained, waiting for the families before it in the '
      'sequence')
  assert f'**{split_test.WAITING}**' in confirmation.results_table(judgement)
  assert split_test.NOT_TESTED not in confirmation.part(judgement)
  assert not any(confirmation.decided(judgement, f) for f in ('3', '2', '1'))
  # Until it is decided, README's item gives the exploratory reading beside.
  assert confirmation.readme_line('Title', judgement, '1', 'exploratory, the earlier') == (
      f'- Title, as {confirmation.TITLES["1"]}: confirmation: 6 of 6 label splits trained, '
      'waiting for the families before it in the sequence; exploratory, the earlier')


def test_mixed_cpus_are_named_and_left_out_beside():
  values = _interaction_values(PLAN.seeds, 10.0, 1.0)
  values[(F_SF, BC)][21] = (10.0, 10.0)  # Split 21 the other way ...
  cpus = {(((F_SF, BC)), 21): 'cpu B'}  # ... and its runs on two CPUs.
  result = confirmation.family_result(PLAN.families[0], protocol.BEST, PLAN.seeds,
                                      _observations(values, cpus))
  assert result.mixed_cpus == (21,)
  assert '†' in result.per_split
  assert result.test.p_value > 1 / 64
  without = result.without_mixed_cpus()
  assert without.seeds == (20, 22, 23, 24, 25)
  assert without.test.p_value == 1 / 32


def test_judge_and_its_words_on_complete_splits():
  values = _interaction_values(PLAN.seeds, 10.0, 1.0)
  for seed in PLAN.seeds:  # (2): batch norm above none on every split, late.
    values.setdefault(('table3/cifar10_batch_norm_fisher', PE), {})[seed] = (30.0, 40.0 + seed)
    values.setdefault(('table3/cifar10_none_fisher', PE), {})[seed] = (29.0, 30.0)
    # (1): plain below K+1 on every split: the other way.
    for ipm in ('fisher', 'sobolev'):
      values.setdefault((f'table1/cifar10_{ipm}_plain', PE), {})[seed] = (20.0, None)
      values.setdefault((f'table1/cifar10_{ipm}_kplus1', PE), {})[seed] = (25.0 + seed, None)
  judgement = confirmation.judge(PLAN, _observations(values))
  assert [s.word for s in judgement.steps] == [
      paired_test.SUPPORTED, paired_test.SUPPORTED, paired_test.CONTRADICTED]
  # Contrasts 40 + s − 30 for s = 20..25, 30 to 35: the median of their Walsh averages is 32.5; at 6 splits the
  # interval is [min, max] with coverage 1 − 2/64.
  assert confirmation.verdict_text(judgement, '2') == (
      'confirmation (late): **supported** (n=6 splits, p=0.016, the least 6 splits allow; '
      '+32.5 [+30.0, +35.0] (96.9%))')
  # Decided: README's item gives the confirmation alone (the exploratory reading stays in
  # conclusions.md).
  assert all(confirmation.decided(judgement, f) for f in ('3', '2', '1'))
  assert confirmation.readme_line('Title', judgement, '2', 'exploratory, the earlier') == (
      f'- Title, as {confirmation.TITLES["2"]}: confirmation (late): **supported** (n=6 '
      'splits, p=0.016, the least 6 splits allow; +32.5 [+30.0, +35.0] (96.9%))')
  # (3), an interaction, first says what its part under the paper's per-example f shows
  # alone: +1 on every split, p = 1/64 unadjusted, in the paper's direction (secondary).
  assert confirmation.readme_line('Title', judgement, '3', 'x') == (
      "- Title: **in the paper's direction** under the paper's per-example f "
      '(Ω_F(f)+Ω_S(f) − Ω_F(f)+Ω_S(f−): +1.0 [+1.0, +1.0], p=0.016; secondary); what was '
      'tested is an interaction, that cost is larger under the broadcast f: **supported** '
      '(n=6 splits, p=0.016, the least 6 splits allow)')
  page = confirmation.part(judgement)
  assert len(re.findall(r'^\| \d \| \(\d\)', page, re.MULTILINE)) == 3  # A row per family.
  assert 'late (secondary): no split with every run yet (0 of 6)' in ' '.join(page.split())


def test_load_reads_the_records_folders(tmp_path):
  # No records yet: every cell has no runs, and nothing fails.
  found = confirmation.load(str(tmp_path), PLAN)
  assert set(found) == set(PLAN.keys) and not any(found.values())
  for cell, _ in PLAN.keys:
    cells_lib.get_cell(cell)


def test_secondary_words_and_the_least_p():
  """A secondary reading's words at 0.05 either way; 'the least n splits allow' exactly where
  p is 2^-n (every split in the paper's direction)."""
  six = split_test.signed_rank_over_splits([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
  assert six.p_value == 1 / 64 == six.smallest_p
  assert confirmation.secondary_word(six) == "in the paper's direction"
  assert confirmation.p_with_floor(six) == '0.016, the least 6 splits allow'
  other = split_test.signed_rank_over_splits([-1.0, -2.0, -3.0, -4.0, -5.0, -6.0])
  assert confirmation.secondary_word(other) == 'the other way'
  mixed = split_test.signed_rank_over_splits([1.0, -2.0, 3.0, -4.0, 5.0, 0.5])
  assert confirmation.secondary_word(mixed) == paired_test.NOT_SHOWN
  assert confirmation.p_with_floor(mixed) == protocol.p_text(mixed.p_value)


def test_the_committed_records_p_values_are_the_same_through_scipy():
  """Every family of the committed confirmation at both endpoints: the split test's p values
  equal a count over all 2^6 sign patterns written in the tests (studies/tests/counting.py's, on
  the contrasts as the test rounds them), and scipy's exact Wilcoxon where the contrasts have no
  tie or zero; the pages print these."""
  from scipy import stats  # pylint: disable=g-import-not-at-top
  judgement = confirmation.judge(PLAN, confirmation.load(
      os.path.join(RESULTS, confirmation.RECORDS), PLAN))
  results = list(judgement.primary) + list(judgement.secondary) + [
      part for _, part in judgement.simple]
  assert len(results) == 8 and all(r.n == 6 for r in results)
  through_scipy = 0
  for result in results:
    counted, counted_other = counting.signed_rank_by_enumeration(
        [paired_test.rounded(d) for d in result.contrasts])
    assert result.test.p_value == pytest.approx(counted, abs=1e-12)
    assert result.test.p_other == pytest.approx(counted_other, abs=1e-12)
    sizes = [abs(paired_test.rounded(d)) for d in result.contrasts]
    if 0 not in sizes and len(set(sizes)) == len(sizes):
      exact = stats.wilcoxon(result.contrasts, alternative='greater', method='exact').pvalue
      assert result.test.p_value == pytest.approx(exact, abs=1e-12)
      through_scipy += 1
  assert through_scipy >= 4  # Most families have neither tie nor zero.
  assert [round(r.test.p_value, 3) for r in judgement.primary] == [0.016] * 3
