"""The step-900 reading: its curve arithmetic against hand counts and what it names as the
cause for each way two runs of different lengths can compare."""
import json
import os

import tensorflow as tf

from studies.fashion_mnist_100 import step900_reading as reading_lib

CELL = reading_lib.CELL
STEPS = range(50, 901, 50)


def _record(root, seed, validation, labeled=None, cpu='CPU A', finished=True, cell=CELL):
  """A record under root/<cell>/seed_<seed> with metrics.json, versions.json and eval curves."""
  model_dir = os.path.join(root, cell, f'seed_{seed}')
  os.makedirs(model_dir)
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    json.dump({'finished': finished, 'step': max(validation)}, f)
  with open(os.path.join(model_dir, 'versions.json'), 'w') as f:
    json.dump({'numerics': {'cpu': {'model_name': cpu}}}, f)
  writer = tf.summary.create_file_writer(os.path.join(model_dir, 'eval'))
  with writer.as_default():
    for step, value in sorted(validation.items()):
      tf.summary.scalar(reading_lib.VALIDATION, value, step=step)
    for step, value in sorted((labeled or {}).items()):
      tf.summary.scalar(reading_lib.LABELED, value, step=step)
  writer.close()
  return model_dir


def _flat(steps, level=38.0, **changes):
  """A curve at `level` with the values of `changes` (s<step>=value) put in."""
  curve = {s: level for s in steps}
  curve.update({int(k[1:]): v for k, v in changes.items()})
  return curve


def test_rises_and_first_difference_known_answers():
  curve = {50: 40.0, 100: 35.0, 150: 60.0, 200: 59.5}
  assert reading_lib.rises(curve) == [(100, -5.0), (150, 25.0), (200, -0.5)]
  assert reading_lib.last_rise(curve) == -0.5
  assert reading_lib.largest_rise(curve) == (150, 25.0)
  assert reading_lib.largest_rise({50: 1.0}) is None
  assert reading_lib.last_rise({}) is None
  # Equal rises: the earliest is the largest.
  assert reading_lib.largest_rise({1: 0.0, 2: 3.0, 3: 6.0}) == (2, 3.0)
  long = {**curve, 250: 10.0}
  assert reading_lib.first_difference(curve, long) is None
  assert reading_lib.first_difference(curve, {**long, 150: 60.01}) == 150
  assert reading_lib.first_difference(curve, {50: 40.0}) == 100  # Missing counts as unequal.


def _reading(tmp_path, short, longs, probe=None):
  """The reading's records: the 900-step run of split 0, the 1,800-step runs by split."""
  records = tmp_path / 'step900'
  _record(str(records / reading_lib.SHORT), 0, short)
  for seed, curve in longs.items():
    _record(str(records / reading_lib.LONG), seed, curve)
  if probe:
    _record(str(records / reading_lib.PROBE), 0, probe, finished=False)
  return reading_lib.load(str(records), str(tmp_path / 'originals'))


LONG_STEPS = range(50, 1801, 50)


def test_a_jump_before_a_longer_runs_end_is_the_training(tmp_path):
  reading = _reading(tmp_path, _flat(STEPS), {0: _flat(LONG_STEPS, s900=52.0, s950=49.0),
                                              1: _flat(LONG_STEPS)})
  assert reading_lib.jumps_before_the_end(reading.long[0]) == [(900, 14.0)]
  assert reading_lib.cause(reading) == reading_lib.TRAINING
  # 38 before the jump, 38 at the end: it recovers.
  # The rule's outcomes: a jump in both runs (the training's own) or, with equal curves, in
  # the 900-step run alone (the run's end); here only the longer run jumps: neither.
  assert reading_lib.declared_outcome(reading) == reading_lib.NEITHER
  assert reading_lib.declared_text(reading) == (
      "none of the outcomes the reading's rule fixed before the runs occurred (split 0: the "
      '900- and 1,800-step runs part at step 900; the 900-step run trained again does not '
      'jump at its end; the 1,800-step run jumps at step 900)')
  assert reading_lib.verdict_text(reading) == (
      'none of the outcomes its rule fixed before the runs occurred; read after the runs '
      '(exploratory), a 1,800-step run jumps before its end; the cause is not shown; split 0 '
      'jumps at step 900 (+14.0) of 1,800 and recovers')
  stays = _reading(tmp_path / 'c', _flat(STEPS), {0: _flat(LONG_STEPS, s900=52.0, s1800=40.0),
                                                  1: _flat(LONG_STEPS)})
  assert reading_lib.verdict_text(stays).endswith('split 0 jumps at step 900 (+14.0) of 1,800')
  # A jump at a 1,800-step run's own end is not before it.
  at_end = _reading(tmp_path / 'b', _flat(STEPS), {0: _flat(LONG_STEPS, s1800=60.0),
                                                   1: _flat(LONG_STEPS)})
  assert reading_lib.jumps_before_the_end(at_end.long[0]) == []
  assert reading_lib.cause(at_end) == reading_lib.NO_JUMP


def test_the_rules_declared_outcomes(tmp_path):
  both = _reading(tmp_path / 'a', _flat(STEPS, s900=52.0),
                  {0: _flat(LONG_STEPS, s900=52.0), 1: _flat(LONG_STEPS)})
  assert reading_lib.declared_outcome(both) == reading_lib.THE_TRAINING
  assert reading_lib.declared_text(both) is None
  # Equal before step 900, the 900-step run alone jumping at its end: the run's end.
  end = _reading(tmp_path / 'b', _flat(STEPS, s900=52.0), {0: _flat(LONG_STEPS),
                                                           1: _flat(LONG_STEPS)})
  assert reading_lib.declared_outcome(end) == reading_lib.THE_END
  # Parting earlier, with that same jump: neither.
  parted = _reading(tmp_path / 'c', _flat(STEPS, s900=52.0),
                    {0: _flat(LONG_STEPS, s150=39.0), 1: _flat(LONG_STEPS)})
  assert reading_lib.declared_outcome(parted) == reading_lib.NEITHER
  assert ('part at step 150; the 900-step run trained again jumps at its end; the 1,800-step '
          'run does not jump before its end') in reading_lib.declared_text(parted)


def test_a_jump_at_the_short_runs_end_alone_points_to_the_end(tmp_path):
  reading = _reading(tmp_path, _flat(STEPS, s900=48.0), {0: _flat(LONG_STEPS),
                                                          1: _flat(LONG_STEPS)})
  assert reading_lib.cause(reading) == reading_lib.AT_THE_END_ONLY
  # 9.9 points is under the threshold.
  close = _reading(tmp_path / 'b', _flat(STEPS, s900=47.9), {0: _flat(LONG_STEPS),
                                                              1: _flat(LONG_STEPS)})
  assert reading_lib.JUMP == 10.0
  assert reading_lib.cause(close) == reading_lib.NO_JUMP


def test_unfinished_or_missing_runs_wait(tmp_path):
  records = tmp_path / 'step900'
  _record(str(records / reading_lib.SHORT), 0, _flat(STEPS))
  _record(str(records / reading_lib.LONG), 0, _flat(LONG_STEPS, s900=60.0))
  _record(str(records / reading_lib.LONG), 1, _flat(range(50, 1001, 50)), finished=False)
  reading = reading_lib.load(str(records), str(tmp_path / 'none'))
  assert set(reading.long) == {0} and reading.originals == {}
  assert reading_lib.cause(reading) == reading_lib.WAITING
  assert reading_lib.verdict_text(reading) == 'its runs are not all recorded yet'
  # A curve differing only on the labeled set is another computation too.
  labeled = reading_lib.Run(0, 900, 'CPU A', _flat(STEPS), _flat(STEPS, s450=20.0))
  same = reading_lib.Run(0, 1800, 'CPU A', _flat(LONG_STEPS), _flat(LONG_STEPS, s450=21.0))
  assert labeled.first_difference(same) == 450
  assert labeled.first_difference(labeled) is None


def test_part_numbers_and_the_other_records(tmp_path):
  originals = tmp_path / 'originals'
  # Split 1: 38 → 80.74 at step 900; labeled 24 → 79.
  _record(str(originals), 1, _flat(STEPS, s850=38.74, s900=80.74),
          labeled=_flat(STEPS, level=24.0, s900=79.0))
  # The 1,800-step run of split 0 parts from the 900-step one at step 150 and jumps at 1,200;
  # a second process of the 900-step run (unfinished, evaluated up to step 200) parts at 200.
  reading = _reading(tmp_path, _flat(STEPS, s900=39.0),
                     {0: _flat(LONG_STEPS, s150=37.0, s900=39.0, s1200=58.0, s1800=36.5),
                      1: _flat(LONG_STEPS)},
                     probe=_flat(range(50, 201, 50), s200=38.5))
  assert set(reading.originals) == {1}
  others_root = tmp_path / 'others'
  rises = []
  for seed, (before, last) in enumerate([(30.0, 31.5), (40.0, 32.0), (20.0, 20.25)]):
    # Seed 1 also jumps mid-run: 30 → 45 at step 300.
    curve = {250: 30.0, 300: 45.0 if seed == 1 else 30.0, 850: before, 900: last}
    _record(str(others_root), seed, curve, cell='table1/cifar10_fisher_plain')
    rises.append(last - before)
  _record(str(others_root / 'step900'), 5, {850: 30.0, 900: 90.0})
  assert len(reading_lib.record_dirs(str(others_root))) == 4
  dirs = reading_lib.record_dirs(str(others_root), leave_out=('step900',))
  assert len(dirs) == 3
  others = reading_lib.read_runs(dirs)
  assert sorted(reading_lib.other_last_rises(others)) == sorted(rises)
  assert reading_lib.mid_run_jumps(others) == (1, 3, [300])
  text = reading_lib.part(reading, dirs)
  lines = text.splitlines()
  assert lines[0].startswith('- Original (broadcast_f_records), 900 steps, split 1: '
                             'validation 80.74% at step 900 (+42.0 from the evaluation '
                             'before), 80.74% at its last step 900, lowest 38.00%; largest '
                             'rise +42.0 at step 900; labeled-set error 79% at the end')
  assert ('- Again, 1,800 steps, split 0: validation 39.00% at step 900 (+1.0 from the '
          'evaluation before), 36.50% at its last step 1800, lowest 36.50%; largest rise '
          '+20.0 at step 1200') in text
  assert ('- Split 0: its 900- and 1,800-step runs first differ at step 150; its 900-step '
          'run and a second process of it (evaluated up to step 200) first differ at step '
          '200.') in text
  assert (f'- {reading_lib.CONCLUSIONS[reading_lib.TRAINING]} Split 0 at step 1200 (+20.0).'
          in lines)
  # Median of +1.5, −8.0, +0.25 is +0.25; the largest +1.5.
  assert lines[-1] == ('- Every other record (n=3): its rise at its last evaluation, median '
                       '+0.25, largest +1.5 points; a jump before its last evaluation in 1 '
                       'of 3, at step 300.')
