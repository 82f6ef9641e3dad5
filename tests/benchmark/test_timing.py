"""The round-robin timer with plain Python functions (no TensorFlow work), timed by a fake
clock that only the functions advance: every sample is known exactly, and no wall time is
asserted."""
import pytest

from tf_ipmssl.benchmark import timing


class FakeClock:
  """time.perf_counter's stand-in: it moves only when a timed function says so."""

  def __init__(self):
    self.now = 100.0

  def perf_counter(self):
    return self.now

  def function(self, calls, name, seconds):
    def call():
      calls.append(name)
      self.now += seconds
    return call


@pytest.fixture
def clock(monkeypatch):
  fake = FakeClock()
  monkeypatch.setattr(timing.time, 'perf_counter', fake.perf_counter)
  return fake


def test_rounds_alternate_functions_after_warm_up(clock):
  calls = []
  timings = timing.measure_interleaved(
      {'a': clock.function(calls, 'a', 0.25), 'b': clock.function(calls, 'b', 2.0)},
      warmup=1, repeats=3)
  assert calls == ['a', 'b'] * 4  # One warm-up call each, then one call each per round.
  assert timings['a'].samples == (0.25,) * 3 and timings['b'].samples == (2.0,) * 3


def test_fast_functions_average_several_calls_per_sample(clock):
  calls = []
  lines = []
  timings = timing.measure_interleaved(
      {'fast': clock.function(calls, 'fast', 0.125), 'slow': clock.function(calls, 'slow', 3.0)},
      warmup=1, repeats=2, min_sample_seconds=1.0, log=lines.append)
  # 0.125 s per warm-up call: ceil(1.0 / 0.125) = 8 calls per sample; 3 s > 1 s: one.
  assert calls.count('fast') == 1 + 2 * 8 and calls.count('slow') == 1 + 2
  assert timings['fast'].samples == (0.125, 0.125)  # Each sample: 8 calls' time / 8.
  assert timings['slow'].samples == (3.0, 3.0)
  assert lines == ['warm-up fast: 0.125 s', 'warm-up slow: 3 s', 'round 1/2 done',
                   'round 2/2 done']


def test_repeats_must_be_positive():
  with pytest.raises(ValueError, match='repeats must be >= 1, got 0'):
    timing.measure_interleaved({'fn': lambda: None}, warmup=0, repeats=0)
