"""Damaged checkpoints: found before a restore, set aside (never deleted), and named.

A checkpoint is damaged when one of its files cannot be read back: random bytes in a
`.data` shard fail its checksum (DataLossError), a truncated `.index` is "not an sstable", a
truncated `.data` shard is "Read less bytes than requested".
Resuming a run checks its checkpoints newest first; each damaged one is moved to
`<model dir>/damaged/checkpoints/` (or `damaged/best/`) with its files, the checkpoint list
is rewritten to the intact ones, and the run resumes from the newest intact checkpoint
(docs/reliability.md).

A newest checkpoint whose files are gone (removed by hand, lost with a disk) while the
checkpoint list still names it is missing: it is left out of the list, saying so, and the
run resumes from the newest intact one as well. One without its `.index` but with data left
is damaged (its data is set aside).

An older checkpoint without its `.index` is not damaged but half deleted: TensorFlow's
CheckpointManager writes the new checkpoint list (still naming the oldest checkpoint) before
it deletes the oldest checkpoint's `.index` and then its data, so a trainer killed in
between leaves it so. Its deletion is completed and the list rewritten, without a word.
"""
import glob
import os
import shutil
from typing import List, Optional, Tuple

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files

DAMAGED_DIR = 'damaged'


def damage(path: str) -> Optional[str]:
  """Why the checkpoint at `path` (a prefix, e.g. .../ckpt-4) cannot be read, or None."""
  try:
    reader = tf.train.load_checkpoint(path)
    for name in reader.get_variable_to_shape_map():
      reader.get_tensor(name)
  except (tf.errors.OpError, ValueError, IndexError) as e:  # IndexError: data cut short.
    message = errors.first_line(e) or type(e).__name__
    return f'{type(e).__name__}: {message}'
  return None


def check_readable(path: str) -> None:
  """A UserError naming the damaged checkpoint (bin/evaluate, bin/export)."""
  why = damage(path)
  if why:
    raise errors.UserError(f'checkpoint {path} is damaged and cannot be read ({why}); use '
                           'the other checkpoint (--checkpoint=latest/best) or retrain')


def _write_checkpoint_list(checkpoint_dir, paths):
  """The `checkpoint` state file (CheckpointState text proto) listing `paths`, newest last,
  with the times the list held for them: a tf.train.CheckpointManager keeps managing only
  the checkpoints listed with a time (without, the next save would leave them out of the
  list, their files never deleted)."""
  names = [os.path.basename(p) for p in paths]
  text = f'model_checkpoint_path: "{names[-1]}"\n' + ''.join(
      f'all_model_checkpoint_paths: "{name}"\n' for name in names)
  state = tf.train.get_checkpoint_state(checkpoint_dir)
  if state is not None and len(state.all_model_checkpoint_timestamps) == len(
      state.all_model_checkpoint_paths):
    times = dict(zip(state.all_model_checkpoint_paths, state.all_model_checkpoint_timestamps))
    if all(path in times for path in paths):
      text += ''.join(f'all_model_checkpoint_timestamps: {times[path]!r}\n' for path in paths)
      text += f'last_preserved_timestamp: {state.last_preserved_timestamp!r}\n'
  run_files.write_text(os.path.join(checkpoint_dir, 'checkpoint'), text)


def _complete_deletions(paths):
  """`paths` (the checkpoint list, oldest first) without the checkpoints older than the newest
  that have no `.index` (half deleted, the module doc); their leftover files are removed."""
  kept = []
  for i, path in enumerate(paths):
    if i < len(paths) - 1 and not tf.io.gfile.exists(path + '.index'):
      for name in tf.io.gfile.glob(glob.escape(path) + '.data-*'):
        tf.io.gfile.remove(name)
      continue
    kept.append(path)
  return kept


def listed(checkpoint_dir: str) -> List[str]:
  """The checkpoints the checkpoint list of `checkpoint_dir` names, oldest first, whether
  their files are there or not ([] without a list). Unlike tf.train.latest_checkpoint,
  which answers None (and logs an error) when the newest one's files are gone."""
  state = tf.train.get_checkpoint_state(checkpoint_dir)
  if state is None:
    return []
  # TensorFlow has joined the state file's relative names with checkpoint_dir already
  # (relative itself when the run's --model_dir is).
  paths = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
  return [path for path in paths if path]


def _missing(path: str) -> bool:
  """Whether none of the files of the checkpoint at `path` is left (the module doc)."""
  return not tf.io.gfile.glob(glob.escape(path) + '.*')


def set_aside_damaged(model_dir: str, checkpoint_dir: str) -> Tuple[Optional[str], List[str]]:
  """Moves every damaged checkpoint of `checkpoint_dir` to model_dir/damaged/, leaves missing
  ones out of the checkpoint list and completes the deletion of half-deleted ones (the module
  doc); returns the newest intact checkpoint (None if none is left) and one message per
  checkpoint moved or left out."""
  paths = listed(checkpoint_dir)
  if not paths:
    return None, []
  listed_paths = paths
  paths = _complete_deletions(paths)
  intact, messages = [], []
  for path in paths:
    if _missing(path):
      messages.append(f'checkpoint {path} is missing (none of its files is left); left it '
                      'out of the checkpoint list')
      continue
    why = (damage(path) if tf.io.gfile.exists(path + '.index') else
           'its .index file is missing')
    if why is None:
      intact.append(path)
      continue
    target = os.path.join(model_dir, DAMAGED_DIR, os.path.basename(checkpoint_dir))
    os.makedirs(target, exist_ok=True)
    for name in glob.glob(glob.escape(path) + '.*'):
      shutil.move(name, os.path.join(target, os.path.basename(name)))
    messages.append(f'checkpoint {path} is damaged ({why}); moved it to {target}/')
  if messages or intact != listed_paths:
    if intact:
      _write_checkpoint_list(checkpoint_dir, intact)
    else:
      os.remove(os.path.join(checkpoint_dir, 'checkpoint'))
  return (intact[-1] if intact else None), messages
