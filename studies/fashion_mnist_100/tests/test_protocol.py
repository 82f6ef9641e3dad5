"""The protocol's pairs, endpoints and words, and that the pages judge exactly its pairs."""
import json
import os
import pathlib
import re

import pytest
import tensorflow as tf

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from studies.fashion_mnist_100 import paired_test
from studies.fashion_mnist_100 import protocol
from studies.fashion_mnist_100 import results_page
from tf_ipmssl.sweep import results as results_lib

REPO = str(pathlib.Path(__file__).resolve().parents[3])  # The checkout.
RESULTS = os.path.join(REPO, 'docs', 'results')
PAIRS = protocol.read_pairs(os.path.join(RESULTS, protocol.PAGE))


def test_the_protocol_fixes_its_families_pairs_and_seeds():
  by_family = {f: [p for p in PAIRS if p.family == f] for f in protocol.FAMILIES}
  assert [len(by_family[f]) for f in protocol.FAMILIES] == [3, 5, 2, 2]
  # Each of conclusion (3)'s pairs moves the Sobolev constraint from f− to f, all else fixed.
  for pair in by_family['3a'] + by_family['3b']:
    assert pair.lower == pair.higher[:-len('sobolev_f')] + 'sobolev_fneg'
  assert {p.higher_f for p in by_family['3b']} == {protocol.BROADCAST}
  # Ω_F(f+) + Ω_S(f−) is one computation under either f: its per-example runs stand for it.
  assert [(p.lower, p.lower_f) for p in by_family['3b']] == [
      ('table2/cifar10_fisher_f_sobolev_fneg', protocol.BROADCAST),
      ('table2/cifar10_fisher_fpos_sobolev_fneg', protocol.PER_EXAMPLE)]
  assert sum(len(p.seeds) for p in PAIRS) == 9 + 19 + 16 + 10
  for pair in PAIRS:
    cells_lib.get_cell(pair.higher), cells_lib.get_cell(pair.lower)  # Real cells.


def test_the_pages_judge_exactly_the_protocols_pairs():
  """conclusions.md's primary part (as committed) names every pair of the protocol under
  every endpoint, and no other."""
  with open(os.path.join(RESULTS, 'conclusions.md')) as f:
    primary = results_page.part(f.read(), 'primary')
  unwrapped = re.sub(r'\n\s+(?![\s-])', ' ', primary)
  for family in protocol.FAMILIES:
    for endpoint in protocol.ENDPOINTS:
      heading = f'**({family}) {protocol.FAMILY_TITLES[family]}, {endpoint}**'
      assert unwrapped.count(heading) == 1
      block = unwrapped.split(heading)[1].split('\n- **')[0]
      named = re.findall(r'^  - (.+?): ', block, re.MULTILINE)
      assert named == [p.name for p in PAIRS if p.family == family]


def test_read_pairs_refuses_a_pair_the_protocol_does_not_define(tmp_path):
  page = tmp_path / 'protocol.md'
  page.write_text('<!-- begin primary pairs -->\n| family | higher | higher f | lower | '
                  'lower f | seeds |\n|---|---|---|---|---|---|\n| 3a | a | sideways | b | '
                  'per-example | 0-2 |\n<!-- end primary pairs -->\n')
  with pytest.raises(errors.ConfigError, match='sideways'):
    protocol.read_pairs(str(page))


def _record(root, cell_id, seed, error, validation=(), best_step=900, total_steps=900,
            commit='bbbb1c3ef'):
  """A record with metrics.json, run_config.json, versions.json and an eval curve."""
  model_dir = fake_results.write_run(root, cells_lib.get_cell(cell_id), seed, error)
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  metrics['best']['step'], metrics['total_steps'] = best_step, total_steps
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    json.dump(metrics, f)
  with open(os.path.join(model_dir, 'run_config.json'), 'w') as f:
    json.dump({'format_version': 4, 'train': {'mode': 'ssl', 'critic_updates': 1800},
               'ssl': {'ipm_rampup_updates': 600}}, f)
  with open(os.path.join(model_dir, 'versions.json'), 'w') as f:
    json.dump({'source': {'commit': commit}}, f)
  if validation:
    writer = tf.summary.create_file_writer(os.path.join(model_dir, 'eval'))
    with writer.as_default():
      for step, value in validation:
        tf.summary.scalar(protocol.VALIDATION_CURVE, value, step=step)
    writer.close()
  return model_dir


def test_late_endpoint_rampup_mark_and_commit(tmp_path):
  root = str(tmp_path)
  # Step 850 evaluated twice (a resumed run): the later value counts.
  curve = [(700, 50.0), (750, 30.0), (800, 20.0), (850, 99.0), (850, 10.0), (900, 20.0)]
  model_dir = _record(root, 'table2/cifar10_fisher_f', 0, 25.0, curve, best_step=250)
  run = results_lib.collect_cell(root, cells_lib.get_cell('table2/cifar10_fisher_f')).runs[0]
  assert protocol.late_validation_error(run) == pytest.approx((30 + 20 + 10 + 20) / 4)
  # 250 steps × 2 updates = 500 < 600: inside the ramp-up; step 300 is not.
  assert protocol.best_step_in_rampup(run) is True
  _record(root, 'table2/cifar10_fisher_f', 1, 25.0, best_step=300)
  late = results_lib.collect_cell(root, cells_lib.get_cell('table2/cifar10_fisher_f')).runs[1]
  assert protocol.best_step_in_rampup(late) is False
  assert (protocol.best_step_text(run), protocol.best_step_text(late)) == ('250 ‡', '300')
  # A run used by two pairs counts once among its family's runs.
  bn = protocol.observe(results_lib.collect_cell(
      root, cells_lib.get_cell('table2/cifar10_fisher_f')))
  family = protocol.FamilyResult('2', protocol.BEST, tuple(
      protocol.pair_result(protocol.PrimaryPair('2', 'table2/cifar10_fisher_f',
                                                protocol.PER_EXAMPLE, other,
                                                protocol.PER_EXAMPLE, (0, 1)),
                           protocol.BEST, bn, {0: bn[0], 1: bn[1]})
      for other in ('table2/cifar10_gp_f', 'table2/cifar10_sobolev_f')), None)
  assert family.trained_by == 'Its 6 runs: 6 trained by bbbb1c3'
  assert protocol.late_validation_error(late) is None  # No curve kept.
  assert protocol.training_commit(run) == 'bbbb1c3'
  row_only = results_lib.RunResult(seed=2, test_error=1.0, model_dir=model_dir,
                                   has_record=False)
  assert protocol.late_validation_error(row_only) is None
  assert protocol.best_step_in_rampup(row_only) is None
  assert protocol.best_step_text(row_only) == '–'
  # The supervised critic has no IPM term: its early best steps are never marked.
  supervised = _record(root, 'appendix_c/cifar10_none_4k', 0, 30.0, best_step=100)
  with open(os.path.join(supervised, 'run_config.json')) as f:
    config = json.load(f)
  config['train']['mode'] = 'supervised'
  with open(os.path.join(supervised, 'run_config.json'), 'w') as f:
    json.dump(config, f)
  baseline = results_lib.collect_cell(root, cells_lib.get_cell('appendix_c/cifar10_none_4k'))
  assert protocol.best_step_text(baseline.runs[0]) == '100'


def _cell(cell_id, errors_by_seed):
  return results_lib.CellResult(cells_lib.get_cell(cell_id), tuple(
      results_lib.RunResult(seed=s, test_error=e, model_dir='', has_record=False)
      for s, e in sorted(errors_by_seed.items())))


def test_judge_known_answers_and_holm_over_the_tests_that_ran():
  pairs = [p for p in PAIRS if p.family in ('1', '3a', '3b')]
  results = {}
  # Family 1: every plain cell above its K+1 cell on seeds 0-2: all 9 signs agree.
  for ipm in ('fisher', 'sobolev', 'fisher_sobolev'):
    results[f'table1/cifar10_{ipm}_kplus1'] = _cell(f'table1/cifar10_{ipm}_kplus1',
                                                    {0: 20.0, 1: 21.0, 2: 22.0})
    results[f'table1/cifar10_{ipm}_plain'] = _cell(f'table1/cifar10_{ipm}_plain',
                                                   {0: 25.0, 1: 28.0, 2: 90.0})
  # Family 3a: the full-f cells below on every seed 0-7 of one pair, no other pair's runs.
  results['table2/cifar10_fisher_f_sobolev_f'] = _cell(
      'table2/cifar10_fisher_f_sobolev_f', {s: 20.0 for s in range(9)})
  results['table2/cifar10_fisher_f_sobolev_fneg'] = _cell(
      'table2/cifar10_fisher_f_sobolev_fneg', {s: 23.0 + s for s in range(9)})
  judged = protocol.judge(pairs, results, broadcast={})
  one, three = judged[('1', protocol.BEST)], judged[('3a', protocol.BEST)]
  assert one.test.p_value == 1 / 512 and one.n == 9
  assert one.trained_by == 'Its 18 runs: 18 with no record of their commit (runs.csv rows)'
  assert three.n == 8 and three.test.p_other == 1 / 256  # Seed 8 is not the protocol's.
  # Two tests ran (no late curves, no broadcast runs): Holm doubles the smaller p.
  assert one.adjusted_p == pytest.approx(2 / 512)
  assert three.adjusted_p_other == pytest.approx(2 / 256)
  assert one.word == paired_test.SUPPORTED
  assert three.word == paired_test.CONTRADICTED
  assert judged[('3b', protocol.BEST)].word == 'no runs'
  assert judged[('1', protocol.LATE)].test is None
  line = protocol.verdict_line('(3)', 3, judged)
  assert line == ('(3): per-example f: best step: **contradicted** (n=8, adjusted '
                  'p=1.000); late: no runs with an eval curve — broadcast f: best step: no runs '
                  'yet; late: no runs yet')


def test_a_pair_reads_its_interval_median_and_sign_rule():
  pair = PAIRS[0]
  def run(seed, error, cpu):
    return results_lib.RunResult(seed=seed, test_error=error, model_dir='', cpu=cpu)
  result = protocol.pair_result(pair, protocol.BEST, {
      s: protocol.Observation(run(s, e, 'A'), None, s == 1, None)
      for s, e in ((0, 90.0), (1, 34.0), (2, 31.7))}, {
      s: protocol.Observation(run(s, e, 'B' if s == 2 else 'A'), None, False, None)
      for s, e in ((0, 23.9), (1, 27.0), (2, 26.4))})
  assert result.diffs == pytest.approx((66.1, 7.0, 5.3))
  assert result.text == (
      'fisher_plain − fisher_kplus1: +66.1 / +7.0 / +5.3† (seeds 0–2, n=3 of 3); '
      'Hodges–Lehmann +21.3 [+5.3, +66.1] (75%); median +7.0; sign rule: holds; ‡ best step '
      'inside the ramp-up: fisher_plain seed 1')
