"""The fault campaign: random faults against a tiny bin/train run, each trial rerun to the end
and compared with an uninterrupted run.

  python tests/reliability/campaign.py --faults=100 --seed=0 --max_faults_per_trial=4

From `--seed` it draws trials of one to three faults each until `--faults` faults have
fired: kill -9 at a random instant or at a named crash window (fault_injection.POINTS:
checkpoint write, checkpoint-list commit, deleting the oldest checkpoint, metrics.json
rewrite, best/ update, export start, export rename, ...), SIGTERM at a random instant or at
a window (after the loop included), a second trainer started at a random instant, two
trainers racing for a killed trainer's stale lock, random bytes in or a truncated .index of
the newest checkpoint, a full disk and a read-only disk. Each trial's model dir lies on a
tmpfs of its own (in a mount namespace of the campaign's own, `unshare -m`); where this
process may not mount (not root, no unshare) the disk faults are skipped, saying why. After
its faults a trial reruns the same command until the run finishes (at most --reruns times)
and compares it with the uninterrupted run: every tensor of the latest and the best
checkpoint, metrics.json without its wall times, the export's outputs on fixed images,
every TensorBoard scalar (the wall-time ones aside) and the user's files beside and inside
the run. It prints one row per trial (each followed by the summary so far) and the summary line

  faults F, trials T, identical I, different D, unfinished U, user files lost L, tracebacks K

A fault that did not fire (the process ended before its instant or point) is not counted.
tests/reliability/test_fault_campaign.py runs a short campaign in the default suite and the
long one under `-m slow`; docs/reliability.md records the long one's result.
"""
import dataclasses
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import time
from typing import List, Optional

if __name__ == '__main__':  # Run as a script: the repository root on sys.path.
  sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from absl import app  # pylint: disable=g-import-not-at-top,wrong-import-position
from absl import flags  # pylint: disable=g-import-not-at-top,wrong-import-position
import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position

from tests import fixtures  # pylint: disable=g-import-not-at-top,wrong-import-position
from tests.training import runs  # pylint: disable=g-import-not-at-top,wrong-import-position

flags.DEFINE_integer('faults', 4, 'Faults to fire (trials are drawn until this many fired).')
flags.DEFINE_integer('seed', 0, 'Seed of the draw.')
flags.DEFINE_string('work_dir', None, 'Where the runs go (default: a new temporary folder, '
                    'removed at the end).')
flags.DEFINE_integer('reruns', 4, 'Reruns of the same command after a trial\'s faults before '
                     'the trial counts as unfinished.')
flags.DEFINE_integer('max_faults_per_trial', 3, 'Faults per trial: 1 to this many.')
FLAGS = flags.FLAGS

_IN_NAMESPACE = 'TF_IPMSSL_CAMPAIGN_NAMESPACE'
STEPS = 6
# A tiny run with every crash window in it: checkpoints at 2, 4, 6 (keeping 2, so step 6's
# save deletes ckpt-2), evaluations at 3 and 6 (one between checkpoints), the export; 31
# validation and 31 test images, so that metrics.json's errors (100 k / 31) are compared
# exactly on rates that float32 cannot hold.
EVALUATED_IMAGES = 31
OVERRIDES = {'train.steps': STEPS, 'train.checkpoint_every': 2, 'train.eval_every': 3,
             'train.log_every': 1, 'train.sample_every': 3, 'train.keep_checkpoints': 2,
             'train.deterministic_ops': True, 'train.export_classifier': True,
             'build_ssl_data.validation_size': EVALUATED_IMAGES}
# Each window and the times a fresh trainer of this run reaches it.
KILL_POINTS = {'checkpoint_list_write': 8, 'checkpoint_index_deleted': 2,
               'checkpoint_written': 3, 'best_written': 2, 'metrics_replace': 4,
               'training_done': 1, 'export_tmp_created': 1, 'export_written': 1,
               'export_old_removed': 1, 'export_renamed': 1}
TERM_POINTS = {'training_done': 1, 'checkpoint_written': 3, 'best_written': 2,
               'export_tmp_created': 1, 'metrics_replace': 4}
# Scalars that are wall times, not results: the tags that start so.
WALL_TIME_SCALARS = ('time/', 'images_per_second')
WALL_TIME_METRICS = ('wall_seconds', 'wall_seconds_this_session', 'wall_split',
                     'wall_split_this_session')
USER_FILES = {'README.md': 'my notes on this run\n', 'model/my_notes.txt': 'mine\n'}
DISK_SIZE = '64m'


@dataclasses.dataclass
class Process:
  """One bin/train process of a trial: what it was given and how it ended."""
  fault: str
  returncode: Optional[int] = None
  stderr: str = ''
  fired: bool = False


@dataclasses.dataclass
class Trial:
  index: int
  faults: List[str] = dataclasses.field(default_factory=list)
  processes: List[Process] = dataclasses.field(default_factory=list)
  fired: int = 0
  finished: bool = False
  differences: List[str] = dataclasses.field(default_factory=list)
  lost: List[str] = dataclasses.field(default_factory=list)
  tracebacks: int = 0


class Disk:
  """A trial's disk: a tmpfs of its own where this process may mount, else a folder."""

  def __init__(self, path, mountable):
    self.path, self.mountable = str(path), mountable
    os.makedirs(self.path, exist_ok=True)
    if mountable:
      self._mount('-t', 'tmpfs', '-o', f'size={DISK_SIZE}', 'tmpfs', self.path)

  def _mount(self, *args):
    subprocess.run(['mount', *args], check=True, capture_output=True)

  def remount(self, options):
    self._mount('-o', f'remount,{options}', self.path)

  def release(self):
    if self.mountable:
      subprocess.run(['umount', self.path], capture_output=True)


def can_mount():
  """'' when this process may mount tmpfs in a mount namespace of its own, else why not."""
  if os.geteuid() != 0:
    return 'not root'
  if shutil.which('unshare') is None:
    return 'no unshare'
  probe = subprocess.run(['unshare', '-m', 'mount', '-t', 'tmpfs', 'tmpfs', '/mnt'],
                         capture_output=True, text=True)
  return '' if probe.returncode == 0 else f'unshare -m failed: {probe.stderr.strip()}'


class Campaign:
  """The reference run, the trials and their comparison."""

  def __init__(self, work_dir, seed, mount_problem):
    self.work_dir = pathlib.Path(work_dir)
    self.rng = random.Random(seed)
    self.mount_problem = mount_problem
    self.data_dir = runs.make_data(self.work_dir / 'data', num_test=EVALUATED_IMAGES)
    self.bindings = runs.tiny_bindings(self.data_dir, **OVERRIDES)
    self.images, _ = fixtures.fake_images_and_labels('fashion_mnist', 16, seed=3)
    self.reference = None
    self.reference_seconds = None

  # --- processes

  def _start(self, model_dir, fault=None):
    return subprocess.Popen(runs.train_command(model_dir, self.bindings),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=runs.environment(fault), cwd=str(runs.REPO_ROOT))

  def _wait(self, process, record):
    _, record.stderr = process.communicate(timeout=900)
    record.returncode = process.returncode
    return record

  def run(self, model_dir, fault=None):
    """bin/train to its end; a `fault` of fault_injection (`point#n=action`)."""
    record = Process(fault or 'rerun')
    self._wait(self._start(model_dir, fault), record)
    record.fired = bool(fault) and 'fault injected: ' in record.stderr
    return record

  def signal_after(self, model_dir, signum, delay):
    record = Process(f'{"kill -9" if signum == 9 else "SIGTERM"} at {delay:.1f}s')
    process = self._start(model_dir)
    try:
      process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
      process.send_signal(signum)
      record.fired = True
    return self._wait(process, record)

  def second_trainer(self, model_dir, delay):
    first = Process(f'first+second@{delay:.1f}s')
    process = self._start(model_dir)
    try:
      process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
      first.fired = True
    second = self.run(model_dir)
    second.fault = 'second trainer'
    self._wait(process, first)
    return [first, second]

  def racing_pair(self, model_dir):
    """Two trainers started at once (after a kill left a stale lock)."""
    processes = [self._start(model_dir), self._start(model_dir)]
    records = [self._wait(p, Process('racing trainer')) for p in processes]
    records[0].fired = True
    return records

  # --- faults on disk

  @staticmethod
  def corrupt_newest(model_dir, rng):
    """Random bytes in the newest checkpoint's data, or its .index truncated; '' when there
    is no older checkpoint to fall back to, or the run says it finished."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    directory = os.path.join(model_dir, 'checkpoints')
    state = tf.train.get_checkpoint_state(directory) if os.path.isdir(directory) else None
    metrics = _read_json(os.path.join(model_dir, 'metrics.json')) or {}
    if state is None or len(state.all_model_checkpoint_paths) < 2 or metrics.get('finished'):
      return ''
    newest = state.model_checkpoint_path
    newest = newest if os.path.isabs(newest) else os.path.join(directory, newest)
    if not os.path.exists(newest + '.index'):
      return ''
    if rng.random() < 0.5:
      with open(newest + '.index', 'r+b') as f:
        f.truncate(10)
      return f'truncated {os.path.basename(newest)}.index'
    (data,) = [n for n in os.listdir(directory)
               if n.startswith(os.path.basename(newest) + '.data')]
    with open(os.path.join(directory, data), 'r+b') as f:
      size = f.seek(0, os.SEEK_END)
      f.seek(rng.randrange(size // 4, size - 64))
      f.write(rng.randbytes(64))
    return f'random bytes in {os.path.basename(newest)}'

  # --- the campaign

  def run_reference(self):
    model_dir = str(self.work_dir / 'reference' / 'model')
    started = time.time()
    record = self.run(model_dir)
    self.reference_seconds = time.time() - started
    if record.returncode != 0:
      raise RuntimeError(f'the uninterrupted run failed: {record.stderr[-3000:]}')
    self.reference = self.signature(model_dir)

  def draw_fault(self, can_disk):
    kinds = ['kill_point'] * 5 + ['kill_time'] * 4 + ['term_time'] * 2 + ['term_point'] * 2
    kinds += ['second_trainer'] * 2 + ['racing_pair', 'corrupt', 'corrupt']
    if can_disk:
      kinds += ['full_disk'] * 2 + ['read_only'] * 2
    return self.rng.choice(kinds)

  def trial(self, index, faults_left):
    trial = Trial(index)
    disk = Disk(self.work_dir / f'trial_{index:03d}', not self.mount_problem)
    model_dir = os.path.join(disk.path, 'model')
    for name, text in USER_FILES.items():
      os.makedirs(os.path.dirname(os.path.join(disk.path, name)), exist_ok=True)
      pathlib.Path(disk.path, name).write_text(text)
    rng, count = self.rng, self.rng.randint(1, FLAGS.max_faults_per_trial)
    try:
      while trial.fired < min(count, faults_left):
        kind = self.draw_fault(not self.mount_problem)
        records, label = self._apply(kind, model_dir, disk, rng)
        if label is None:  # Not applicable in this state (e.g. nothing to corrupt yet).
          trial.processes += records
          continue
        fired = sum(r.fired for r in records) + (kind == 'corrupt')
        trial.faults.append(label + ('' if fired else ' (did not fire)'))
        trial.processes += records
        trial.fired += min(fired, 1)
        metrics = _read_json(os.path.join(model_dir, 'metrics.json')) or {}
        if metrics.get('finished') or (not fired and len(trial.faults) > 4 * count):
          break  # No fault fires in a finished run.
      for _ in range(FLAGS.reruns):
        record = self.run(model_dir)
        trial.processes.append(record)
        if record.returncode == 0:
          trial.finished = True
          break
      trial.tracebacks = sum('Traceback' in p.stderr for p in trial.processes)
      trial.lost = [name for name, text in USER_FILES.items()
                    if _read(os.path.join(disk.path, name)) != text]
      if trial.finished:
        trial.differences = compare(self.reference, self.signature(model_dir))
    finally:
      disk.release()
    return trial

  def _apply(self, kind, model_dir, disk, rng):
    """Applies one fault; returns (its processes, its label) or ([], None) when it does not
    apply now."""
    seconds = self.reference_seconds
    if kind == 'kill_point':
      point = rng.choice(sorted(KILL_POINTS))
      fault = f'{point}#{rng.randint(1, KILL_POINTS[point])}=kill'
      return [self.run(model_dir, fault)], f'kill -9 at {fault[:-5]}'
    if kind == 'term_point':
      point = rng.choice(sorted(TERM_POINTS))
      fault = f'{point}#{rng.randint(1, TERM_POINTS[point])}=term'
      return [self.run(model_dir, fault)], f'SIGTERM at {fault[:-5]}'
    if kind in ('kill_time', 'term_time'):
      delay = rng.uniform(0.5, seconds)
      record = self.signal_after(model_dir, 9 if kind == 'kill_time' else 15, delay)
      return [record], f'{"kill -9" if kind == "kill_time" else "SIGTERM"} at {delay:.1f}s'
    if kind == 'second_trainer':
      delay = rng.uniform(0.5, seconds)
      return self.second_trainer(model_dir, delay), f'second trainer at {delay:.1f}s'
    if kind == 'racing_pair':
      killed = self.signal_after(model_dir, 9, rng.uniform(3.0, seconds))
      if not killed.fired:
        return [killed], None
      return [killed] + self.racing_pair(model_dir), f'{killed.fault}, then two trainers'
    if kind == 'corrupt':
      what = self.corrupt_newest(model_dir, rng)
      return [], (what or None)
    if kind == 'full_disk':
      stat = os.statvfs(disk.path)
      used = (stat.f_blocks - stat.f_bfree) * stat.f_frsize // 1024
      size = used + rng.randrange(50, 1000)  # A whole run needs about 1800 KiB.
      disk.remount(f'size={size}k')
      try:
        record = self.run(model_dir)
      finally:
        disk.remount(f'size={DISK_SIZE}')
      record.fired = record.returncode == 1 and 'space' in record.stderr
      record.fault = f'full disk ({size} KiB)'
      return [record], record.fault
    if kind == 'read_only':
      disk.remount('ro')
      try:
        record = self.run(model_dir)
      finally:
        disk.remount('rw')
      record.fault = 'read-only disk'
      record.fired = True
      return [record], record.fault
    raise ValueError(kind)

  # --- what is compared

  def signature(self, model_dir):
    """Everything an uninterrupted run is compared on (the module doc)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    out = {}
    for folder in ('checkpoints', 'best'):
      latest = tf.train.latest_checkpoint(os.path.join(model_dir, folder))
      out[f'{folder}/name'] = os.path.basename(latest or 'none')
      if latest:
        for name, value in runs.checkpoint_values(latest).items():
          out[f'{folder}/{name}'] = value
    metrics = _read_json(os.path.join(model_dir, 'metrics.json')) or {}
    for key, value in metrics.items():
      if key not in WALL_TIME_METRICS:
        out[f'metrics.json/{key}'] = json.dumps(value, sort_keys=True)
    module = tf.saved_model.load(os.path.join(model_dir, 'export'))
    outputs = module.signatures['serving_default'](images=tf.constant(self.images))
    for key, value in outputs.items():
      out[f'export/{key}'] = value.numpy()
    for folder in ('train', 'eval'):
      for (tag, step), values in _scalars(os.path.join(model_dir, folder)).items():
        if not tag.startswith(WALL_TIME_SCALARS):
          out[f'{folder}/{tag}@{step}'] = values
    return out


def compare(reference, actual):
  """The keys of the signatures whose values differ (names only, sorted)."""
  differences = []
  for key in sorted(set(reference) | set(actual)):
    a, b = reference.get(key), actual.get(key)
    if a is None or b is None:
      differences.append(f'{key} {"missing" if b is None else "extra"}')
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
      numeric = all(np.issubdtype(np.asarray(v).dtype, np.number) for v in (a, b))
      if not (np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=numeric)):
        differences.append(key)  # NaN equals NaN; names (the export's) compare as they are.
    elif a != b:
      differences.append(key)
  return differences


def _scalars(directory):
  """{(tag, step): sorted distinct values} of the TensorBoard event files in directory (a
  step written again by a resumed run counts once if it has the same value)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  out = {}
  if not os.path.isdir(directory):
    return out
  for name in sorted(os.listdir(directory)):
    if 'tfevents' not in name:
      continue
    try:
      for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
        for value in event.summary.value:
          array = tf.make_ndarray(value.tensor)
          if array.ndim == 0:
            out.setdefault((value.tag, int(event.step)), set()).add(float(array))
    except tf.errors.DataLossError:  # The last record of a killed writer.
      continue
  return {key: tuple(sorted(values)) for key, values in out.items()}


def _read(path):
  try:
    return pathlib.Path(path).read_text()
  except OSError:
    return None


def _read_json(path):
  text = _read(path)
  try:
    return json.loads(text) if text is not None else None
  except ValueError:
    return None


def row(trial):
  if not trial.finished:
    verdict = 'UNFINISHED'
  elif trial.differences:
    shown = ', '.join(trial.differences[:4])
    more = len(trial.differences) - 4
    verdict = f'DIFFERENT ({shown}{f", +{more}" if more > 0 else ""})'
  else:
    verdict = 'identical'
  statuses = ','.join(str(p.returncode) for p in trial.processes)
  extra = ''
  if trial.lost:
    extra += f'; user files lost: {", ".join(trial.lost)}'
  if trial.tracebacks:
    extra += f'; tracebacks: {trial.tracebacks}'
  return (f'trial {trial.index:3d}: {"; ".join(trial.faults)} | exit statuses {statuses} | '
          f'{verdict}{extra}')


def summary(trials):
  return (f'faults {sum(t.fired for t in trials)}, trials {len(trials)}, identical '
          f'{sum(t.finished and not t.differences for t in trials)}, different '
          f'{sum(t.finished and bool(t.differences) for t in trials)}, unfinished '
          f'{sum(not t.finished for t in trials)}, user files lost '
          f'{sum(len(t.lost) for t in trials)}, tracebacks {sum(t.tracebacks for t in trials)}')


def _in_own_mount_namespace():
  """Re-executes this program in a mount namespace of its own where it may; returns why
  the disk faults are skipped ('' when they are not)."""
  problem = can_mount()
  if problem or os.environ.get(_IN_NAMESPACE):
    return problem
  os.environ[_IN_NAMESPACE] = '1'
  os.execvp('unshare', ['unshare', '-m', '--propagation', 'private', sys.executable,
                        os.path.abspath(__file__), *sys.argv[1:]])
  return ''  # Not reached.


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments {argv[1:]}')
  mount_problem = _in_own_mount_namespace()
  if mount_problem:
    print(f'full and read-only disk faults skipped: {mount_problem}', flush=True)
  work_dir = FLAGS.work_dir or _temporary_dir()
  os.makedirs(work_dir, exist_ok=True)
  try:
    campaign = Campaign(work_dir, FLAGS.seed, mount_problem)
    started = time.time()
    campaign.run_reference()
    print(f'uninterrupted run: {campaign.reference_seconds:.1f}s; seed {FLAGS.seed}, '
          f'{FLAGS.faults} faults', flush=True)
    trials = []
    while sum(t.fired for t in trials) < FLAGS.faults:
      trial = campaign.trial(len(trials) + 1, FLAGS.faults - sum(t.fired for t in trials))
      trials.append(trial)
      print(row(trial), flush=True)
      print(f'  so far: {summary(trials)}', flush=True)
    print(f'({time.time() - started:.0f}s)', flush=True)
    print(summary(trials), flush=True)
  finally:
    if not FLAGS.work_dir:
      shutil.rmtree(work_dir, ignore_errors=True)


def _temporary_dir():
  import tempfile  # pylint: disable=g-import-not-at-top
  return tempfile.mkdtemp(prefix='fault_campaign_')


if __name__ == '__main__':
  app.run(main)
