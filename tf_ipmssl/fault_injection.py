"""Named points where a test or the fault campaign stops the trainer (or bin/sweep) at an exact
instant.

The trainer calls `reach(point)` at the instants where a crash leaves a distinct state on
disk (between writing a checkpoint and its checkpoint list, between the list and deleting
the oldest checkpoint, before metrics.json, while exporting, ...). Nothing happens unless
the environment variable TF_IPMSSL_FAULT names that point:

  TF_IPMSSL_FAULT='<point>[#<n>]=<action>'

fires the n-th time (default: the first) the point is reached, saying so on stderr
(`fault injected: ...`). Actions:

- `kill`: SIGKILL to this process (as `kill -9`: no handler, no cleanup);
- `term`: SIGTERM to this process, then it goes on (as a cluster's preemption notice);
- `pause:<dir>`: creates `<dir>/<point>.reached` and waits until `<dir>/<point>.continue`
  exists (a barrier: a test orders two processes without relying on timing).

Reading no TensorFlow, it is imported by run_lock and run_files as well.
"""
import os
import signal
import sys
import time
from typing import Dict

ENVIRONMENT_VARIABLE = 'TF_IPMSSL_FAULT'

# Every point, where it is, and what a crash there leaves behind.
POINTS = {
    'lock_takeover': 'a stale train.lock was found and is about to be taken over',
    'checkpoint_list_write': 'a checkpoint\'s files are written, the checkpoint list not yet',
    'checkpoint_index_deleted': 'the checkpoint list names the oldest checkpoint, whose '
                                '.index is deleted and whose data is not yet',
    'checkpoint_written': 'a training checkpoint is committed, metrics.json not yet rewritten',
    'best_written': 'best/ holds a new best checkpoint, the training checkpoint not yet',
    'metrics_replace': "metrics.json's new content is written beside it, not yet renamed",
    'training_done': 'the last step is done (checkpoint and metrics), the export not begun',
    'export_tmp_created': 'export.tmp/ is created, its partial-export marker not yet written',
    'export_written': 'export.tmp/ is complete, not yet renamed to export/',
    'export_old_removed': "the earlier export's files are removed, export.tmp/ not yet renamed",
    'export_renamed': 'export/ is in place, metrics.json does not yet say finished',
    # Reached by bin/sweep (the local backend), not the trainer.
    'sweep_run_kept': "bin/sweep kept a run's outcome (its record archived), the next run "
                      'not yet started',
}

_reached: Dict[str, int] = {}


def _armed():
  """(point, n, action) of TF_IPMSSL_FAULT, or None."""
  spec = os.environ.get(ENVIRONMENT_VARIABLE)
  if not spec:
    return None
  where, _, action = spec.partition('=')
  point, _, count = where.partition('#')
  if point not in POINTS:
    raise ValueError(f'{ENVIRONMENT_VARIABLE} names an unknown point {point!r}; points: '
                     f'{", ".join(POINTS)}')
  return point, int(count or 1), action


def reach(point: str):
  """Marks that the trainer reached `point` (one of POINTS); fires an armed fault there."""
  armed = _armed()
  if armed is None:
    return
  _reached[point] = _reached.get(point, 0) + 1
  if armed[0] != point or armed[1] != _reached[point]:
    return
  action = armed[2]
  sys.stderr.write(f'fault injected: {point}#{armed[1]}={action}\n')
  sys.stderr.flush()
  if action == 'kill':
    os.kill(os.getpid(), signal.SIGKILL)
  elif action == 'term':
    os.kill(os.getpid(), signal.SIGTERM)
  elif action.startswith('pause:'):
    directory = action[len('pause:'):]
    with open(os.path.join(directory, f'{point}.reached'), 'w') as f:
      f.write(str(os.getpid()))
    while not os.path.exists(os.path.join(directory, f'{point}.continue')):
      time.sleep(0.01)
  else:
    raise ValueError(f'{ENVIRONMENT_VARIABLE}: unknown action {action!r} (kill, term, '
                     'pause:<dir>)')


def watch_checkpoint_manager(manager):
  """Gives a tf.train.CheckpointManager the points `checkpoint_list_write` (before each write
  of its checkpoint list) and `checkpoint_index_deleted` (between deleting an old
  checkpoint's .index and its data). Does nothing unless a fault is armed."""
  if _armed() is None:
    return
  from tensorflow.python.checkpoint import checkpoint_management  # pylint: disable=g-import-not-at-top
  record_state, sweep = manager._record_state, manager._sweep  # pylint: disable=protected-access
  delete = checkpoint_management._delete_file_if_exists  # pylint: disable=protected-access

  def record_state_at_point():
    reach('checkpoint_list_write')
    record_state()

  def delete_at_point(filespec):
    delete(filespec)
    if filespec.endswith('.index'):
      reach('checkpoint_index_deleted')

  def sweep_at_points():
    checkpoint_management._delete_file_if_exists = delete_at_point  # pylint: disable=protected-access
    try:
      sweep()
    finally:
      checkpoint_management._delete_file_if_exists = delete  # pylint: disable=protected-access

  manager._record_state, manager._sweep = record_state_at_point, sweep_at_points  # pylint: disable=protected-access
