"""The round-robin timer with plain Python functions (no TensorFlow work)."""
import time

import pytest

from tf_ipmssl.benchmark import timing


def test_rounds_alternate_functions_after_warm_up():
  calls = []

  def fn(name, seconds):
    def call():
      calls.append(name)
      time.sleep(seconds)
    return call

  timings = timing.measure_interleaved({'a': fn('a', 0.002), 'b': fn('b', 0.02)}, warmup=1,
                                       repeats=3)
  assert calls == ['a', 'b'] * 4  # One warm-up call each, then one call each per round.
  assert len(timings['a'].samples) == len(timings['b'].samples) == 3
  assert timings['b'].min >= 0.02 > timings['a'].median


def test_fast_functions_average_several_calls_per_sample():
  count = {'fast': 0, 'slow': 0}

  def fast():
    count['fast'] += 1

  def slow():
    count['slow'] += 1
    time.sleep(0.03)

  timings = timing.measure_interleaved({'fast': fast, 'slow': slow}, warmup=1, repeats=2,
                                       min_sample_seconds=0.02)
  assert count['slow'] == 3            # 0.03 s > 0.02 s: one call per sample.
  assert count['fast'] > 3             # Many calls fill each 0.02 s sample.
  assert timings['fast'].median < 0.01


def test_repeats_must_be_positive():
  with pytest.raises(ValueError):
    timing.measure_interleaved({'fn': lambda: None}, warmup=0, repeats=0)
