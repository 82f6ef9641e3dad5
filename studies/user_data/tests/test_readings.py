"""The study's secondary readings on synthetic records whose answers are set by hand: the
gain per condition, the costs of model selection, the per-class gains and the rare-minus-
common difference, the score table, the page's readings part and its figure."""
import hashlib
import pathlib

import numpy as np
import pytest

from studies.user_data import figure
from studies.user_data import plan as plan_lib
from studies.user_data import readings
from studies.user_data import verdicts
from studies.user_data.tests.synthetic import K_PLUS_1, SUPERVISED
from studies.user_data.tests.synthetic import edited_copy
from studies.user_data.tests.synthetic import write_run

SEEDS = range(30, 38)
# Labels per class under ratio 10 (the page: 25, 19, 15, 11, 9, 7, 5, 4, 3, 2).
IMBALANCED_LABELS = [25, 19, 15, 11, 9, 7, 5, 4, 3, 2]
# Class test errors: the supervised critic 50 everywhere; K+1 per part (by label). Under
# imbalance the rare three (Sneaker, Bag, Ankle boot) gain 20 + i, the common three 5, the
# rest 10; with balanced labels every class gains 10, but Bag 16: rare − common +2.
SUPERVISED_CLASSES = [50.0] * 10
# The share of foreign test images the K+1 critic's threshold rejects at 100% foreign, per
# split: uneven, so that the table's mean and range are not those of a constant (and the
# mean, 14.0, is not the median, 12.5).
FOREIGN_REJECTED = [2.0, 30.0, 11.0, 7.0, 19.0, 3.0, 26.0, 14.0]


def _k_plus_1_classes(part, i):
  if part == 'balanced':
    return [40.0] * 8 + [34.0, 40.0]
  return [45.0] * 3 + [40.0] * 4 + [30.0 - i] * 3


def _foreign(auroc_critic, known, foreign=40.0, default='critic'):
  return {'default': default, 'scores': {
      'softmax': {'auroc': 0.6, 'rejected_known_pct': 5.0, 'rejected_foreign_pct': 20.0},
      'critic': {'auroc': auroc_critic, 'rejected_known_pct': known,
                 'rejected_foreign_pct': foreign}}}


def _mean_least_largest(values):
  """The score table's reading of a column, computed here: mean [least, largest]."""
  return f'{sum(values) / len(values):.1f} [{min(values):.1f}, {max(values):.1f}]'


@pytest.fixture(scope='module')
def records(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('records'))
  for i, seed in enumerate(SEEDS):
    def run(part, cell, **kw):
      write_run(plan_lib.record_dir(root, part, cell, seed), **kw)
    for part in ('balanced', 'imbalanced'):
      ssl = _k_plus_1_classes(part, i)
      run(part, SUPERVISED, test_error=30.0 + i, balanced=31.0 + i, final=30.5 + i,
          class_errors=SUPERVISED_CLASSES)
      # The 10-per-class subset chooses step 100, where the test error is 1 + i points above
      # the chosen step's (1 + i % of the 8,000 test images: a count).
      curves = ({verdicts.SUBSET_TAG: {50: 10.0, 100: 5.0},
                 verdicts.TEST_TAG: {50: 30.0, 100: 26.0 + i}} if part == 'balanced' else None)
      run(part, K_PLUS_1, test_error=25.0, balanced=25.0, final=26.0 + i,
          class_errors=ssl, curves=curves)
    run('six_known_0', K_PLUS_1, test_error=20.0, foreign_test=_foreign(0.7 + 0.01 * i, 5.0))
    run('six_known_100', K_PLUS_1, test_error=24.0 - i,
        foreign_test=_foreign(0.6, 4.0 + i, foreign=FOREIGN_REJECTED[i]))
    run('six_known_0', SUPERVISED, test_error=22.0,
        foreign_test={'default': 'entropy', 'scores': {
            'softmax': {'auroc': 0.52, 'rejected_known_pct': 5.0,
                        'rejected_foreign_pct': 8.0},
            'entropy': {'auroc': 0.55, 'rejected_known_pct': 5.0,
                        'rejected_foreign_pct': 10.0}}})
  return root


def test_the_plan_binds_the_ratio_the_readings_take():
  assert readings.imbalance_ratio(plan_lib.read_plan()) == 10.0


def test_the_gain_per_condition(records):
  plan = plan_lib.read_plan()
  found = {c.name: g for c, g in readings.gains(plan, records)}
  for i, seed in enumerate(SEEDS):
    assert found['balanced labels'][seed] == 30.0 + i - 25.0  # Test error.
    assert found['imbalanced labels'][seed] == 31.0 + i - 25.0  # Balanced test error.
    assert found['6 classes, 0% foreign'][seed] == 22.0 - 20.0
    assert found['6 classes, 100% foreign'][seed] == 22.0 - (24.0 - i)


def test_the_costs_of_model_selection(records):
  rows = {(r.part, r.cell): r for r in readings.selection_rows(plan_lib.read_plan(), records)}
  assert len(rows) == 7
  for i, seed in enumerate(SEEDS):
    assert rows['balanced', SUPERVISED].last[seed] == pytest.approx(0.5)
    assert rows['imbalanced', K_PLUS_1].last[seed] == pytest.approx(1.0 + i)
    assert rows['balanced', K_PLUS_1].subset[seed] == 1.0 + i
  assert rows['six_known_0', K_PLUS_1].last == {}  # No final error recorded.
  assert rows['imbalanced', K_PLUS_1].subset == {}  # No subset curve recorded.


def test_the_rarest_and_commonest_classes():
  names = 'abcdef'
  assert readings.extreme_classes(names, [5, 4, 3, 3, 2, 1]) == (('d', 'e', 'f'),
                                                                ('a', 'b', 'c'))
  # A tie: the lower label counts as the more common.
  assert readings.extreme_classes(names, [1, 1, 1, 1, 1, 1]) == (('d', 'e', 'f'),
                                                                ('a', 'b', 'c'))


def test_the_per_class_gains_and_their_rare_minus_common(records):
  plan = plan_lib.read_plan()
  rows = readings.class_rows(plan, records)
  assert [r.labels for r in rows] == IMBALANCED_LABELS
  assert rows[0].name == 'T-shirt/top' and rows[0].splits == 8
  mean_rare_ssl = 30.0 - np.mean(range(8))  # 26.5
  assert rows[9].errors['imbalanced'] == pytest.approx((50.0, mean_rare_ssl,
                                                        50.0 - mean_rare_ssl))
  assert rows[8].errors['balanced'] == pytest.approx((50.0, 34.0, 16.0))
  found = readings.rare_minus_common(plan, records)
  for i, seed in enumerate(SEEDS):
    imbalanced = (20.0 + i) - 5.0
    balanced = np.mean([10.0, 16.0, 10.0]) - 10.0
    assert found[seed] == pytest.approx((imbalanced, balanced, imbalanced - balanced))


def test_the_score_table(records):
  rows = {(r.run, r.score): r for r in readings.score_rows(plan_lib.read_plan(), records)}
  assert set(rows) == {('K+1, 0% foreign', 'softmax'), ('K+1, 0% foreign', 'critic'),
                       ('K+1, 100% foreign', 'softmax'), ('K+1, 100% foreign', 'critic'),
                       ('supervised', 'softmax'), ('supervised', 'entropy')}
  critic = rows['K+1, 0% foreign', 'critic']
  assert critic.default and not rows['K+1, 0% foreign', 'softmax'].default
  assert critic.aurocs == pytest.approx([0.7 + 0.01 * i for i in range(8)])
  assert rows['K+1, 100% foreign', 'critic'].rejected_known == tuple(4.0 + i for i in range(8))


def test_the_readings_part(records):
  text = readings.readings_part(plan_lib.read_plan(), records)
  # 6 classes at 100%: gains −2 … +5; the Hodges-Lehmann estimate of an arithmetic run is its
  # middle, +1.5, and its exact interval the 4th smallest and largest Walsh averages (±2.5).
  assert ('| 6 classes, 100% foreign | question mismatch | 8 | +1.5 [-1.0, +4.0] (96.1%) | '
          '-2.0 / -1.0 / +0.0 / +1.0 / +2.0 / +3.0 / +4.0 / +5.0 |') in text
  assert '| balanced | appendix_c/cifar10_none_4k | 8 | +0.5 [+0.5, +0.5] (96.1%) | 0 |  |' in text
  assert ('| balanced | table1/cifar10_fisher_kplus1_entropy | 8 | +4.5 [+2.0, +7.0] (96.1%) | 8 '
          '| +4.5 [+2.0, +7.0] (96.1%) |') in text
  assert '| Ankle boot | 2 | 50.0 | 40.0 | +10.0 | 50.0 | 26.5 | +23.5 |' in text
  assert 'their difference +16.5 [+14.0, +19.0] (96.1%)' in text
  assert ('| K+1, 0% foreign | critic (default) | 8 | 0.735 [0.700, 0.770] | '
          '5.0 [5.0, 5.0] | 40.0 [40.0, 40.0] |') in text
  known = _mean_least_largest([4.0 + i for i in range(8)])
  foreign = _mean_least_largest(FOREIGN_REJECTED)
  assert (known, foreign) == ('7.5 [4.0, 11.0]', '14.0 [2.0, 30.0]')  # Median 12.5: not it.
  assert (f'| K+1, 100% foreign | critic (default) | 8 | 0.600 [0.600, 0.600] | {known} | '
          f'{foreign} |') in text
  assert readings.readings_part(plan_lib.read_plan(), '/nonexistent') == 'No record yet.'


def test_the_figure_draws_every_split_and_writes_the_same_bytes_twice(records, tmp_path):
  plan = plan_lib.read_plan()
  gains = [(c.name, g) for c, g in readings.gains(plan, records)]
  drawn = figure.draw(gains, plan.seeds)
  lines = drawn.axes[0].lines
  for i, seed in enumerate(plan.seeds):
    assert list(lines[i].get_xdata()) == [0, 1, 2, 3]
    assert list(lines[i].get_ydata()) == [g[seed] for _, g in gains]
  digests = []
  for name in ('a.png', 'b.png'):
    figure.write(str(tmp_path / name), gains, plan.seeds)
    digests.append(hashlib.sha256((tmp_path / name).read_bytes()).hexdigest())
  assert digests[0] == digests[1]


def test_readme_gives_the_numbers_for_a_users_own_images(records, tmp_path):
  plan = plan_lib.read_plan()
  text = readings.readme_part(plan, records)
  assert 'over its 8 label splits (its verdicts: [above](#does-the-gain-survive-data-as-users-' \
         'have-it))' in text
  readme = (pathlib.Path(__file__).resolve().parents[3] / 'README.md').read_text()
  assert '\n## Does the gain survive data as users have it?\n' in readme
  # Gains: 5..12 (estimate 8.5), 6..13, 2 each, -2..5 (1.5).
  assert ('+8.5 with balanced labels (n=8), +9.5 with imbalanced labels (n=8), +2.0 with '
          '6 classes, 0% foreign (n=8), +1.5 with 6 classes, 100% foreign (n=8).') in text
  assert ('changed the test error by +4.5 points (K+1, balanced labels, n=8); keeping the '
          'last step instead, by +4.5 points.') in text
  assert ('5.0% and 40.0% (K+1, 0% foreign, score critic, AUROC 0.735, n=8); 7.5% and 14.0% '
          '(K+1, 100% foreign, score critic, AUROC 0.600, n=8); 5.0% and 10.0% (supervised, '
          'score entropy, AUROC 0.550, n=8).') in text
  import shutil  # pylint: disable=g-import-not-at-top
  partial = str(tmp_path / 'partial')
  shutil.copytree(records, partial)
  shutil.rmtree(plan_lib.record_dir(partial, 'six_known_100', K_PLUS_1, 37))
  text = readings.readme_part(plan, partial)
  assert ('so far (55 of its 56 runs recorded, on 8 of its 8 label splits; no test until all '
          'are in). Exploratory readings') in text
  assert '+1.0 with 6 classes, 100% foreign (n=7)' in text  # -2..4.
  assert readings.readme_part(plan, str(tmp_path / 'none')) == (
      'The user-data study has no record yet.')


def test_the_figure_marks_each_conditions_hodges_lehmann_estimate(records):
  plan = plan_lib.read_plan()
  gains = [(c.name, g) for c, g in readings.gains(plan, records)]
  drawn = figure.draw(gains, plan.seeds)
  bars = [c.get_segments()[0] for c in drawn.axes[0].collections]
  for position, (_, per_split) in enumerate(gains):
    values = list(per_split.values())
    walsh = [(a + b) / 2 for i, a in enumerate(values) for b in values[i:]]
    (x0, y0), (x1, y1) = bars[position]
    assert (x0, x1) == (position - 0.25, position + 0.25)
    assert y0 == y1 == pytest.approx(np.median(walsh))


def test_records_that_lack_keys_are_left_out_not_fatal(records, tmp_path):
  plan = plan_lib.read_plan()

  def no_rejected_share(metrics):
    del metrics['foreign_test']['scores']['critic']['rejected_known_pct']

  def no_bag_images(metrics):  # A class without test images: its error is null.
    metrics['best']['test_class_errors']['Bag'] = None

  damaged = edited_copy(records, tmp_path / 'damaged', [
      ('six_known_100', K_PLUS_1, 30, no_rejected_share),
      ('imbalanced', K_PLUS_1, 31, no_bag_images)])
  rows = {(r.run, r.score): r for r in readings.score_rows(plan, damaged)}
  assert len(rows['K+1, 100% foreign', 'critic'].aurocs) == 7
  assert len(rows['K+1, 100% foreign', 'softmax'].aurocs) == 8
  assert readings.class_gains(damaged, 'imbalanced', 31) is None
  assert 31 not in readings.rare_minus_common(plan, damaged)
  assert readings.class_rows(plan, damaged)[0].splits == 7
  text = readings.readings_part(plan, damaged)
  assert 'mean over the 7 split(s) with all four balanced and imbalanced runs' in text
  assert '| K+1, 100% foreign | critic (default) | 7 |' in text
