"""Where a bin/train session's wall time goes: each second in exactly one part.

The parts (`PARTS`, metrics.json's `wall_split`, reporting.py):

- `startup`: from the process's start to the end of the session's first training step
  (imports, data, building the run, restoring, tracing the step functions);
- `training`: the training steps after it;
- `evaluation`: validation, labeled-set and test errors;
- `checkpoints`: checkpoints (best/ included), metrics.json, TensorBoard summaries and
  samples, the progress line;
- `export`: the SavedModel of the selected classifier;
- `teardown`: the rest after the last step, up to the final metrics.json.

`Split` charges the time between two switches to the part that was running, so the parts
always add up to the session's wall time up to the instant read. The process's exit after
its final line comes after metrics.json is written and is not in it.
"""
import contextlib
import os
import time

PARTS = ('startup', 'training', 'evaluation', 'checkpoints', 'export', 'teardown')
# How the final line names them.
NAMES = {'startup': 'start-up', 'training': 'training steps', 'evaluation': 'evaluation',
         'checkpoints': 'checkpoints and summaries', 'export': 'export',
         'teardown': 'teardown'}


def process_started():
  """time.time() at this process's start (Linux: /proc), else now."""
  try:
    with open('/proc/self/stat') as f:
      # Field 22, after the command name in parentheses: start time in clock ticks after boot.
      ticks = int(f.read().rsplit(')', 1)[1].split()[19])
    with open('/proc/stat') as f:
      boot = next(int(line.split()[1]) for line in f if line.startswith('btime '))
  except (OSError, ValueError, IndexError, StopIteration):
    return time.time()
  return min(boot + ticks / os.sysconf('SC_CLK_TCK'), time.time())


class Split:
  """The wall time of one session so far, by part; `clock`: time.time or a test's clock."""

  def __init__(self, started, clock=time.time):
    self.clock = clock
    self.seconds = dict.fromkeys(PARTS, 0.0)
    self.current, self.since = 'startup', started

  def switch(self, part):
    """From now on the time goes to `part`."""
    now = self.clock()
    self.seconds[self.current] += now - self.since
    self.current, self.since = part, now

  @contextlib.contextmanager
  def charged_to(self, part):
    """The `with` block's time goes to `part`, then back to the part before it."""
    previous = self.current
    self.switch(part)
    try:
      yield
    finally:
      self.switch(previous)

  def read(self, now):
    """{part: seconds} from the session's start to `now` (a time.time() of this clock)."""
    seconds = dict(self.seconds)
    seconds[self.current] += now - self.since
    return seconds


def add(before, session):
  """The split of earlier sessions (`before`, None: unknown) plus the current session's."""
  if before is None:
    return None
  return {part: before.get(part, 0.0) + session[part] for part in PARTS}


def largest_besides_training(split, share=0.1, count=2):
  """[(part, fraction of the whole)] of the `count` largest parts other than training that
  exceed `share` of the whole, largest first."""
  total = sum(split.values())
  if total <= 0:
    return []
  shares = sorted(((seconds / total, part) for part, seconds in split.items()
                   if part != 'training' and seconds > share * total), reverse=True)
  return [(part, fraction) for fraction, part in shares[:count]]
