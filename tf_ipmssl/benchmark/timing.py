"""Wall-clock timing of TensorFlow calls: warm-up, repeats, median and min–max.

A sample is the wall time of one call (or, for calls faster than `min_sample_seconds`, the
mean of as many back-to-back calls as fill that time), measured after the result has been
copied to the host, so asynchronous execution cannot end the clock early. Several functions
are timed in rounds (each function once per round), so that a change in machine load
affects all of them alike.
"""
import dataclasses
import math
import time
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Timing:
  """Seconds per call, one entry per repeat. `derived` says how a non-measured one was formed."""
  samples: tuple
  derived: str = ''

  def __post_init__(self):
    object.__setattr__(self, 'samples', tuple(float(s) for s in self.samples))
    if not self.samples:
      raise ValueError('a Timing needs at least one sample')

  @property
  def median(self):
    return float(np.median(self.samples))

  @property
  def min(self):
    return min(self.samples)

  @property
  def max(self):
    return max(self.samples)

  def to_json(self):
    out = {'median': self.median, 'min': self.min, 'max': self.max,
           'samples': list(self.samples)}
    if self.derived:
      out['derived'] = self.derived
    return out

  @classmethod
  def from_json(cls, value):
    return cls(tuple(value['samples']), value.get('derived', ''))


def sync(result):
  """Blocks until every tensor in `result` is computed (copies each to the host)."""
  for value in tf.nest.flatten(result):
    if isinstance(value, (tf.Tensor, tf.Variable)):
      value.numpy()
  return result


def measure_interleaved(fns: Mapping[str, Callable], *, warmup: int, repeats: int,
                        min_sample_seconds: float = 0.0,
                        log: Optional[Callable[[str], None]] = None) -> dict:
  """Times several functions, calling each once per round, round after round.

  All samples of a round see about the same machine load, so ratios and paired
  differences of samples of one round (`paired`) cancel most of a drift in load.

  Args:
    fns: name -> function of no argument returning tensors (or nothing).
    warmup: untimed calls of each function first (tracing, XLA compilation, allocator).
    repeats: rounds, i.e. timed samples of each function.
    min_sample_seconds: a function whose last warm-up call took less averages as many
      calls per sample as fill this time (no effect without warm-up).
    log: called with a progress line after each function's warm-up and each round.

  Returns:
    name -> Timing.
  """
  if repeats < 1:
    raise ValueError(f'repeats must be >= 1, got {repeats}')
  log = log or (lambda line: None)
  calls = {name: 1 for name in fns}
  for name, fn in fns.items():
    for _ in range(warmup):
      start = time.perf_counter()
      sync(fn())
      seconds = time.perf_counter() - start
    if warmup:
      log(f'warm-up {name}: {seconds:.3g} s')
      if min_sample_seconds > 0:
        calls[name] = max(1, int(math.ceil(min_sample_seconds / max(seconds, 1e-6))))
  samples = {name: [] for name in fns}
  for round_index in range(repeats):
    for name, fn in fns.items():
      start = time.perf_counter()
      for _ in range(calls[name]):
        result = fn()
      sync(result)
      samples[name].append((time.perf_counter() - start) / calls[name])
    log(f'round {round_index + 1}/{repeats} done')
  return {name: Timing(tuple(s)) for name, s in samples.items()}


def paired(timings: Sequence[Timing], weights: Sequence[float], derived: str) -> Timing:
  """Σ_i weights[i] · timings[i], sample by sample (the timings must be interleaved)."""
  counts = {len(t.samples) for t in timings}
  if len(counts) != 1:
    raise ValueError('paired timings need the same number of samples')
  samples = np.sum([w * np.asarray(t.samples) for t, w in zip(timings, weights)], axis=0)
  return Timing(tuple(samples), derived=derived)


def matmul_function(size):
  """A compiled [size, size] @ [size, size] fp32 matmul and its inputs."""
  # Variables, not captured constants, so that graph optimizations cannot fold the product.
  a = tf.Variable(tf.random.stateless_normal([size, size], seed=[1, 2]), trainable=False)
  b = tf.Variable(tf.random.stateless_normal([size, size], seed=[3, 4]), trainable=False)

  @tf.function
  def matmul():
    # The [1, 1] corner makes the host copy negligible; the whole product is computed.
    return tf.matmul(a, b)[:1, :1]

  return matmul
