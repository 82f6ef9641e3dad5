"""The step-900 reading: its curve arithmetic against hand counts and what it names as the
cause for each way two runs of different lengths can compare."""
import json
import os

import tensorflow as tf

from tf_ipmssl.sweep import step900_reading as reading_lib

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


def _reading(tmp_path, short, long, long_cpu='CPU A'):
  """The runs of the confirmation's trainer, 900 and 1,800 steps, as the sweep records them."""
  records = tmp_path / 'step900'
  _record(str(records / reading_lib.DETERMINISTIC_SHORT), 0, short)
  _record(str(records / reading_lib.DETERMINISTIC_LONG), 0, long, cpu=long_cpu)
  found = reading_lib.load(str(records), str(tmp_path / 'originals'))
  return found.deterministic_short.get(0), found.deterministic_long.get(0)


def test_a_jump_in_the_short_run_alone_is_the_run_end(tmp_path):
  long = _flat(range(50, 1801, 50))
  reading = _reading(tmp_path, _flat(STEPS, s900=70.0), long)
  assert reading_lib.cause(*reading) == (reading_lib.RUN_END, 900)


def test_the_same_jump_in_both_is_the_training(tmp_path):
  long = _flat(range(50, 1801, 50), s900=70.0, s950=72.0)
  reading = _reading(tmp_path, _flat(STEPS, s900=70.0), long)
  assert reading_lib.cause(*reading) == (reading_lib.TRAINING, None)


def test_equal_curves_without_a_jump(tmp_path):
  long = _flat(range(50, 1801, 50), s900=39.0, s1000=80.0)
  reading = _reading(tmp_path, _flat(STEPS, s900=39.0), long)
  assert reading_lib.cause(*reading) == (reading_lib.NO_JUMP, None)
  # A rise just under the threshold is not a jump.
  assert reading_lib.JUMP == 10.0
  close = _reading(tmp_path / 'b', _flat(STEPS, s900=47.9), _flat(range(50, 1801, 50),
                                                                   s900=47.9))
  assert reading_lib.cause(*close) == (reading_lib.NO_JUMP, None)


def test_an_earlier_difference_and_other_cpus(tmp_path):
  long = _flat(range(50, 1801, 50), s400=38.02)
  assert reading_lib.cause(*_reading(tmp_path, _flat(STEPS), long)) == (
      reading_lib.EARLIER, 400)
  other = _reading(tmp_path / 'b', _flat(STEPS, s900=70.0), _flat(range(50, 1801, 50)),
                   long_cpu='CPU B')
  assert reading_lib.cause(*other) == (reading_lib.OTHER_CPUS, None)


def test_unfinished_or_missing_runs_wait(tmp_path):
  records = tmp_path / 'step900'
  _record(str(records / reading_lib.DETERMINISTIC_SHORT), 0, _flat(STEPS))
  _record(str(records / reading_lib.DETERMINISTIC_LONG), 0, _flat(range(50, 1001, 50)),
          finished=False)
  reading = reading_lib.load(str(records), str(tmp_path / 'none'))
  assert reading.deterministic_long == {} and reading.originals == {}
  assert reading_lib.cause(reading.deterministic_short.get(0),
                           reading.deterministic_long.get(0)) == (reading_lib.WAITING, None)
  # A curve differing only on the labeled set is another computation too.
  labeled = reading_lib.Run(0, 900, 'CPU A', _flat(STEPS), _flat(STEPS, s450=20.0))
  same = reading_lib.Run(0, 1800, 'CPU A', _flat(range(50, 1801, 50)),
                         _flat(range(50, 1801, 50), s450=21.0))
  assert reading_lib.cause(labeled, same) == (reading_lib.EARLIER, 450)


def test_part_numbers_and_the_other_records(tmp_path):
  originals = tmp_path / 'originals'
  # Split 1: 38 → 80.74 at step 900; labeled 24 → 79.
  _record(str(originals), 1, _flat(STEPS, s850=38.74, s900=80.74),
          labeled=_flat(STEPS, level=24.0, s900=79.0))
  records = tmp_path / 'step900'
  # The originals' trainer: the 1,800-step run parts from the 900-step one at step 150, a
  # second process of the 900-step run (unfinished, evaluated up to step 200) at
  # step 200.
  _record(str(records / reading_lib.SHORT), 0, _flat(STEPS, s900=39.0))
  _record(str(records / reading_lib.LONG), 0, _flat(range(50, 1801, 50), s150=37.0))
  _record(str(records / reading_lib.PROBE), 0, _flat(range(50, 201, 50), s200=38.5),
          finished=False)
  _record(str(records / reading_lib.DETERMINISTIC_SHORT), 0, _flat(STEPS, s900=39.0))
  _record(str(records / reading_lib.DETERMINISTIC_LONG), 0, _flat(
      range(50, 1801, 50), s900=39.0, s1200=58.0, s1800=36.5))
  reading = reading_lib.load(str(records), str(originals))
  others_root = tmp_path / 'others'
  rises = []
  for seed, (before, last) in enumerate([(30.0, 31.5), (40.0, 32.0), (20.0, 20.25)]):
    _record(str(others_root), seed, {850: before, 900: last},
            cell='table1/cifar10_fisher_plain')
    rises.append(last - before)
  _record(str(others_root / 'step900'), 5, {850: 30.0, 900: 90.0})
  assert len(reading_lib.record_dirs(str(others_root))) == 4
  dirs = reading_lib.record_dirs(str(others_root), leave_out=('step900',))
  assert len(dirs) == 3
  others = reading_lib.other_last_rises(dirs)
  assert sorted(others) == sorted(rises)
  text = reading_lib.part(reading, others)
  lines = text.splitlines()
  assert lines[0].startswith('- Original (broadcast_f_records), 900 steps, split 1: '
                             'validation 80.74% at step 900 (+42.0 from the evaluation '
                             'before), 80.74% at its last step 900, lowest 38.00%; largest '
                             'rise +42.0 at step 900; labeled-set error 79% at the end')
  assert ("- The same, 1,800 steps, split 0: validation 39.00% at step 900 (+1.0 from the "
          'evaluation before), 36.50% at its last step 1800, lowest 36.50%; largest rise '
          '+20.0 at step 1200') in text
  assert ("- Split 0 by the originals' trainer: its 900- and 1,800-step runs first differ at "
          'step 150; its 900-step run and a second process of it (evaluated up to step 200) '
          'first differ at step 200.') in text
  assert (reading_lib.DETERMINISTIC_HEAD + reading_lib.CONCLUSIONS[reading_lib.NO_JUMP]
          in text)
  # Median of +1.5, −8.0, +0.25 is +0.25; the largest +1.5.
  assert lines[-1] == ("- Every other record's rise at its last evaluation (n=3): median "
                       '+0.25, largest +1.5 points.')
