"""The longer-budget reading: its costs and their changes against hand arithmetic, from
records laid out as the sweep leaves them."""
import json
import os

import tensorflow as tf

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import longer_budget
from studies.fashion_mnist_100 import protocol
from tf_ipmssl.sweep import results as results_lib

PE, BC = protocol.PER_EXAMPLE, protocol.BROADCAST
F_SF, F_SFNEG = longer_budget.F_SF, longer_budget.F_SFNEG


def _record(root, cell_id, seed, error, late, best_step):
  """A record whose best step reports `error` and whose last four evaluations average `late`."""
  model_dir = fake_results.write_run(root, cells_lib.get_cell(cell_id), seed, error)
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  metrics['best']['step'], metrics['total_steps'] = best_step, 3600
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    json.dump(metrics, f)
  writer = tf.summary.create_file_writer(os.path.join(model_dir, 'eval'))
  with writer.as_default():
    for step, value in ((3400, 99.0), (3450, late - 1), (3500, late + 1), (3550, late - 2),
                        (3600, late + 2)):
      tf.summary.scalar(protocol.VALIDATION_CURVE, value, step=step)
  writer.close()


def _short(values):
  """900-step observations from {(cell, f): {seed: (best-step error, late)}}."""
  return {key: {seed: protocol.Observation(results_lib.RunResult(seed, best, ''), late, None,
                                           None)
                for seed, (best, late) in by_seed.items()}
          for key, by_seed in values.items()}


def test_costs_at_both_budgets_and_their_changes(tmp_path):
  records = str(tmp_path)
  long_values = {(F_SF, PE): {20: (30.0, 31.0, 2500), 21: (29.0, 30.5, 900)},
                 (F_SFNEG, PE): {20: (26.0, 27.0, 3000), 21: (28.5, 29.0, 3600)},
                 (F_SF, BC): {20: (40.0, 45.0, 1200)}}  # Split 21's broadcast run not yet.
  for (cell, f), by_seed in long_values.items():
    for seed, (error, late, step) in by_seed.items():
      _record(os.path.join(records, longer_budget.FOLDERS[f]), cell, seed, error, late, step)
  # Another seed in the folder is not the reading's.
  _record(os.path.join(records, longer_budget.FOLDERS[PE]), F_SF, 22, 10.0, 10.0, 100)
  long = longer_budget.load(records)
  assert long[(F_SF, PE)][20].late == 31.0  # The last four evaluations' mean.
  assert set(long[(F_SF, PE)]) == {20, 21}
  short = _short({(F_SF, PE): {20: (27.0, 28.0), 21: (27.5, 28.0)},
                  (F_SFNEG, PE): {20: (26.5, 27.0), 21: (27.0, 27.5)},
                  (F_SF, BC): {20: (37.0, 40.0), 21: (38.0, 41.0)}})
  best = longer_budget.splits(short, long, protocol.BEST)
  short_budget, long_budget = longer_budget.SHORT, longer_budget.LONG
  assert [(s.seed, s.budget) for s in best] == [(20, short_budget), (20, long_budget),
                                                (21, short_budget), (21, long_budget)]
  # Split 20: 27 − 26.5 = +0.5 at 900 steps, 30 − 26 = +4 at 3,600: +3.5. Broadcast:
  # 37 − 27 = +10, then 40 − 30 = +10: 0. Split 21: +0.5, then 29 − 28.5 = +0.5: 0; its
  # broadcast cost at 3,600 steps is unknown.
  assert [s.per_example_cost for s in best] == [0.5, 4.0, 0.5, 0.5]
  assert [s.broadcast_cost for s in best] == [10.0, 10.0, 10.5, None]
  assert longer_budget.changes(best) == [(20, 3.5, 0.0), (21, 0.0, None)]
  late = longer_budget.splits(short, long, protocol.LATE)
  assert [s.per_example_cost for s in late] == [1.0, 4.0, 0.5, 1.5]
  text = longer_budget.part(short, long)
  assert text.startswith('5 of 6 longer runs recorded.')
  assert '| 20 | 3,600 steps | 30.00 (step 2,500) | 26.00 (step 3,000) | +4.00 | 40.00 (step ' \
      '1,200) | +10.00 |' in text
  assert '| 21 | 3,600 steps | 29.00 (step 900) | 28.50 (step 3,600) | +0.50 | – | – |' in text
  assert '| 20 | 3,600 steps | 31.00 | 27.00 | +4.00 | 45.00 | +14.00 |' in text  # Late.
  assert ('- Split 20, from 900 to 3,600 steps: the per-example cost moves +3.50 points, the '
          'broadcast cost +0.00.') in text
  assert ('- Split 21, from 900 to 3,600 steps: the per-example cost moves +0.00 points, the '
          'broadcast cost –.') in text
  assert longer_budget.verdict_text(short, long) == '5 of 6 runs trained'
  _record(os.path.join(records, longer_budget.FOLDERS[BC]), F_SF, 21, 39.0, 40.0, 1800)
  complete = longer_budget.load(records)
  assert longer_budget.verdict_text(short, complete) == (
      'the per-example cost of Sobolev on f moves +3.50 and +0.00 points (best step)')


def test_no_longer_runs_yet(tmp_path):
  long = longer_budget.load(str(tmp_path / 'none'))
  assert all(not by_seed for by_seed in long.values())
  text = longer_budget.part({}, long)
  assert text.startswith('0 of 6 longer runs recorded.')
  assert '| 20 | 900 steps | – | – | – | – | – |' in text
  assert 'from 900 to 3,600 steps' not in text  # No change to tell.


def test_the_cpus_of_the_two_budgets_and_their_gap_at_step_900(tmp_path):
  """Runs of the two budgets on different CPUs: the per-example runs' validation errors at
  step 900 differ by |25.0 − 24.5| = 0.5 and |23.0 − 24.0| = 1.0; the broadcast run's gap is
  not counted."""
  def run(name, seed, at_900, cpu):
    model_dir = str(tmp_path / name)
    writer = tf.summary.create_file_writer(os.path.join(model_dir, 'eval'))
    with writer.as_default():
      tf.summary.scalar(protocol.VALIDATION_CURVE, at_900, step=900)
    writer.close()
    return protocol.Observation(results_lib.RunResult(seed, 30.0, model_dir, cpu=cpu), 30.0,
                                None, None)
  short = {(F_SF, PE): {20: run('a', 20, 25.0, 'CPU A')},
           (F_SFNEG, PE): {20: run('b', 20, 23.0, 'CPU A')},
           (F_SF, BC): {20: run('c', 20, 30.0, 'CPU A')}}
  long = {(F_SF, PE): {20: run('d', 20, 24.5, 'CPU B')},
          (F_SFNEG, PE): {20: run('e', 20, 24.0, 'CPU B')},
          (F_SF, BC): {20: run('f', 20, 40.0, 'CPU B')}}
  assert longer_budget.confound(short, long) == (['CPU A'], ['CPU B'], [0.5, 1.0])
  assert 'already differ by 0.50 to 1.00 points' in longer_budget.confound_text(short, long)
  same = {key: {20: run(f'g{i}', 20, 25.0, 'CPU A')} for i, key in enumerate(long)}
  assert longer_budget.confound_text(short, same) is None
