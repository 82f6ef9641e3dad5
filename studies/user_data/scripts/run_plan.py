#!/usr/bin/env python3
"""Trains the study's plan (studies/user_data/README.md), split by split, part by part, with
bin/sweep: one call per cell and split, `--workers` calls at a time, a split's calls before
the next split's, so that a split's runs train on one CPU where a session allows. Run by scripts/sweep.sh, which fixes the training commit and commits the
records; recorded runs are never trained again.

  .venv/bin/python studies/user_data/scripts/run_plan.py --train_checkout=SRC --work=DIR \
      --records=studies/user_data/records [--workers=2] [--dry_run]
"""
import os
import pathlib
import shlex
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
from tf_ipmssl import programs  # pylint: disable=g-import-not-at-top
programs.use_checkout_venv(__file__)  # Outside any venv: the checkout's .venv.

from absl import flags  # pylint: disable=g-import-not-at-top

from studies.user_data import plan as plan_lib
from tf_ipmssl import command_line
from tf_ipmssl import errors

flags.DEFINE_string('train_checkout', None, 'The training commit\'s worktree (bin/sweep '
                    '--train_checkout).')
flags.DEFINE_string('work', None, 'Where the run directories go (one sweep root per part).')
flags.DEFINE_string('records', str(REPO / 'studies' / 'user_data' / 'records'),
                    'The records (one archive per part).')
flags.DEFINE_integer('workers', 2, 'Runs at a time.')
flags.DEFINE_bool('dry_run', False, 'Print the bin/sweep commands only.')
FLAGS = flags.FLAGS


def commands(plan, work, records, train_checkout):
  """Every bin/sweep command of the plan, split by split: [[command, ...] per split]. Each
  call trains one cell of one split (a cell's own gin files and bindings); its root is
  WORK/<part>/<i> (one sweep per root at a time), its archive RECORDS/<part>."""
  out = []
  for seed in plan.seeds:
    calls, taken = [], {}
    for part, sweep_flags in plan_lib.sweeps(plan, seed):
      index = taken[part] = taken.get(part, -1) + 1
      calls.append([sys.executable, str(REPO / 'bin' / 'sweep'),
                    f'--root={os.path.join(work, part, str(index))}',
                    f'--archive={os.path.join(records, part)}',
                    f'--train_checkout={train_checkout}', '--workers=1', '--noplots',
                    *sweep_flags])
    out.append(calls)
  return out


def run_split(calls, workers):
  """Runs a split's calls, `workers` at a time, each with an equal share of the cores as
  TensorFlow threads; the number that failed."""
  threads = str(max(1, (os.cpu_count() or 1) // workers))
  env = dict(os.environ, TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads)
  pending, running, failed = list(calls), [], 0
  while pending or running:
    while pending and len(running) < workers:
      running.append(subprocess.Popen(pending.pop(0), env=env))
    done = next((p for p in running if p.poll() is not None), None)
    if done is None:
      time.sleep(2)
      continue
    running.remove(done)
    failed += done.returncode != 0
  return failed


def main(argv):
  del argv
  if not FLAGS.work or not FLAGS.train_checkout:
    raise errors.ConfigError('usage: run_plan.py --train_checkout=SRC --work=DIR '
                             '[--records=DIR] [--workers=2] [--dry_run]')
  plan = plan_lib.read_plan()
  failed = 0
  for calls in commands(plan, FLAGS.work, FLAGS.records, FLAGS.train_checkout):
    for command in calls:
      print(shlex.join(['bin/sweep', *command[2:]]), flush=True)
    if not FLAGS.dry_run:
      failed += run_split(calls, FLAGS.workers)
  done = len(plan_lib.recorded(FLAGS.records, plan))
  print(f'{done} of {len(plan_lib.runs(plan))} runs recorded; {failed} sweep(s) failed',
        flush=True)
  return 1 if failed else 0


if __name__ == '__main__':
  command_line.run(main)
