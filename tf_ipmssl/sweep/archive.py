"""A sweep's durable record: each finished run's small files, kept outside the sweep root.

A sweep root holds checkpoints, summaries and logs, often on a scratch disk that a job or a
machine does not keep. With an archive (`bin/sweep --archive=DIR`) each finished run's
record — its results (metrics.json), its data (dataset.json), its configuration and
versions, and its evaluation curves (the TensorBoard scalars of eval/; a few KB) — is
copied to DIR/<cell id>/seed_<s>/ as soon as it finishes, beside the sweep's own identity
of the run (sweep_run.json: cell, seed, gin files and bindings). A run whose versions.json
does not name its CPU (older ones do not: run_dir/run_record.py) gets the CPU of the machine
that saw it finish in archived_on.json.
Before a sweep starts, each run missing from ROOT whose finished record is archived is
restored from it, so a sweep restarted on a fresh disk skips what it has trained already.

Each copy of a record, the root's and the archive's, ends with manifest.json: every file of
the record (its path in the run directory, size and SHA-256), written last and whole once
the others are. A copy whose files differ from its manifest (a file missing, cut short,
other bytes, or a file the manifest does not list) is damaged. Before a sweep, both copies
of each run are checked: a damaged copy is repaired from the other one where that one is
whole (each file named in one line; what the repair replaces is removed, never left beside
it), and a run is trained again only where neither copy is whole. A record written before
manifests (none beside it) is read as it is, and gets one when it is next archived, or when
it repairs the other copy; an archive copy without a manifest beside a root copy that has a
whole one (its manifest deleted) is written anew from the root's. In the
root only the record's files are checked: checkpoints and logs are the trainer's.

A record is portable: the run directory in versions.json's commands is kept as
'<root>/<cell id>/seed_<s>' in the archive, and read back as the root's own on a restore.

DIR has ROOT's layout, so `bin/sweep --tables_only --root=DIR` builds the tables from the
archive alone. A record is only ever written for a run whose identity matches the archived
one: an archive holding the same cell and seed trained with other gin files or bindings is
refused with a message, never overwritten or mixed into the tables.

A run whose record was lost can still stand in an archive as one row of
DIR/runs_without_record.csv (runs.csv's columns, results.RECORDLESS_ROWS_FILE): the sweep
counts it finished and never trains it again, and the tables read the row.
"""
import dataclasses
import hashlib
import json
import os
import shutil
from typing import Callable, List, Optional, Sequence, Tuple

from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import plan as plan_lib
from tf_ipmssl.sweep import results as results_lib

RUN_FILE = 'sweep_run.json'
MANIFEST_FILE = 'manifest.json'
# metrics.json last: a copy cut short leaves no finished record behind.
RECORD_FILES = (run_files.CONFIG_FILE, run_files.RUN_CONFIG_FILE,
                run_files.OPERATIVE_CONFIG_FILE, run_files.VERSIONS_FILE,
                results_lib.ARCHIVED_ON_FILE, run_files.DATASET_FILE, run_files.METRICS_FILE)
# Folders copied whole, before metrics.json: the evaluations' TensorBoard scalars (the
# trainer writes its images and the training scalars to train/, which stays behind).
RECORD_DIRS = ('eval',)
# The files the sweep writes into the archive's copy, not the trainer (archived_on.json is
# copied into a root with the rest of the record; sweep_run.json is the archive's alone).
ARCHIVE_FILES = (RUN_FILE, results_lib.ARCHIVED_ON_FILE)
# Where a root's damaged record files go when neither copy is whole (the trainer's own
# damaged/ folder of the run): the run is then trained again.
DAMAGED_DIR = 'damaged'
_ROOT_MARK = '<root>'

# Check states of one copy of a record.
ABSENT, WHOLE, UNVERIFIED, DAMAGED = 'absent', 'whole', 'unverified', 'damaged'


def identity(run: plan_lib.Run) -> dict:
  """What makes two runs the same run: the cell, the seed and bin/train's gin arguments."""
  return {'cell': run.cell.id, 'seed': run.seed, 'gin_files': list(run.gin_files),
          'gin_bindings': list(run.gin_bindings)}


def archived_dir(run: plan_lib.Run, archive: str) -> str:
  return plan_lib.run_dir(archive, run.cell, run.seed)


def record_files(directory: str) -> List[str]:
  """The record's files in `directory`, as paths relative to it (sorted, '/'-separated):
  those of RECORD_FILES and ARCHIVE_FILES that exist and every file of RECORD_DIRS (a
  copy's leftover '.tmp' files left out)."""
  found = [name for name in RECORD_FILES + (RUN_FILE,)
           if os.path.isfile(os.path.join(directory, name))]
  for folder in RECORD_DIRS:
    path = os.path.join(directory, folder)
    if os.path.isdir(path):
      found += [f'{folder}/{name}' for name in os.listdir(path)
                if os.path.isfile(os.path.join(path, name)) and not name.endswith('.tmp')]
  return sorted(set(found))


def _describe_file(path: str) -> dict:
  digest = hashlib.sha256()
  size = 0
  with open(path, 'rb') as f:
    for block in iter(lambda: f.read(1 << 20), b''):
      digest.update(block)
      size += len(block)
  return {'size': size, 'sha256': digest.hexdigest()}


def write_manifest(directory: str):
  """Writes directory/manifest.json for the record files it holds now, whole (a write
  beside it, then a rename): the last file of a record."""
  files = {name: _describe_file(os.path.join(directory, *name.split('/')))
           for name in record_files(directory)}
  run_files.write_json(directory, MANIFEST_FILE, {'files': files})


@dataclasses.dataclass(frozen=True)
class Check:
  """One copy of a record checked against its manifest.

  Attributes:
    state: ABSENT (no record file), WHOLE (every file as its manifest says), UNVERIFIED (no
      manifest: a record written before them; only an unreadable metrics.json is seen as
      damage) or DAMAGED.
    damaged: of a DAMAGED copy, its files that differ from the manifest (missing, other
      size or bytes), are not listed in it, or (manifest.json itself) cannot be read.
  """
  state: str
  damaged: Tuple[str, ...] = ()


def check(directory: str) -> Check:
  """The copy of a record in `directory` (a run of the root or of an archive) checked."""
  present = record_files(directory)
  manifest_path = os.path.join(directory, MANIFEST_FILE)
  if not os.path.exists(manifest_path):
    if not present:
      return Check(ABSENT)
    if (os.path.exists(os.path.join(directory, run_files.METRICS_FILE)) and
        run_files.read_metrics(directory, unreadable_ok=True) is None):
      return Check(DAMAGED, (run_files.METRICS_FILE,))
    return Check(UNVERIFIED)
  try:
    listed = json.loads(run_files.read_text(manifest_path)).get('files')
  except (OSError, ValueError, AttributeError):
    listed = None
  if not isinstance(listed, dict):
    return Check(DAMAGED, (MANIFEST_FILE,))
  damaged = []
  for name in sorted(set(listed) | set(present)):
    if name not in listed or name not in present:
      damaged.append(name)
      continue
    try:
      if _describe_file(os.path.join(directory, *name.split('/'))) != listed[name]:
        damaged.append(name)
    except OSError:
      damaged.append(name)
  return Check(DAMAGED, tuple(damaged)) if damaged else Check(WHOLE)


def _whole_and_finished(directory: str, checked: Check) -> bool:
  return checked.state in (WHOLE, UNVERIFIED) and run_files.finished(directory)


def _copy_binary(source: str, target: str):
  """`source` to `target` whole: a reader sees no part of it (a copy, then a rename)."""
  shutil.copyfile(source, target + '.tmp')
  os.replace(target + '.tmp', target)


def _remove(path: str):
  os.remove(path)
  folder = os.path.dirname(path)
  if os.path.basename(folder) in RECORD_DIRS and not os.listdir(folder):
    os.rmdir(folder)


def _copy_file(name: str, source_dir: str, target_dir: str, root: Optional[str]):
  """One record file (a path relative to the run) from source_dir to target_dir, written
  whole; versions.json made portable into an archive (`root` None), with `root` as its
  root out of one."""
  source = os.path.join(source_dir, *name.split('/'))
  target = os.path.join(target_dir, *name.split('/'))
  os.makedirs(os.path.dirname(target), exist_ok=True)
  if name == run_files.VERSIONS_FILE:
    text = run_files.read_text(source)
    text = _portable_versions(text) if root is None else _local_versions(text, root)
    run_files.write_text(target, text)
  else:
    _copy_binary(source, target)


def _ordered(names: Sequence[str]) -> List[str]:
  """Record files in copy order: the folders' files, then RECORD_FILES' order (metrics.json
  last)."""
  order = {name: index for index, name in enumerate(RECORD_FILES)}
  return sorted(names, key=lambda name: ('/' not in name and name in order,
                                         order.get(name, -1), name))


def _copy(source_dir: str, target_dir: str, root: Optional[str],
          names: Optional[Sequence[str]] = None) -> List[str]:
  """The record's files of source_dir (or those of `names` it holds) into target_dir, each
  written whole, metrics.json last (`root`: the root target_dir is a run of, None for an
  archive); then the target's record files that the source lacks (an older evaluation
  file, a file of another copy) are removed, the archive's own files (ARCHIVE_FILES) aside,
  and the target's manifest is written. Returns what was removed."""
  os.makedirs(target_dir, exist_ok=True)
  present = record_files(source_dir)
  if names is not None:
    present = [name for name in present if name in names]
  for name in _ordered([n for n in present if n != RUN_FILE]):
    _copy_file(name, source_dir, target_dir, root)
  kept = set(record_files(source_dir)) | set(ARCHIVE_FILES if root is None else ())
  removed = [name for name in record_files(target_dir) if name not in kept]
  for name in removed:
    _remove(os.path.join(target_dir, *name.split('/')))
  _remove_leftovers(target_dir)
  write_manifest(target_dir)
  return removed


def _remove_leftovers(directory: str):
  """The '.tmp' files of a copy cut short."""
  for folder in ('',) + RECORD_DIRS:
    path = os.path.join(directory, folder)
    if os.path.isdir(path):
      for name in os.listdir(path):
        if name.endswith('.tmp') and os.path.isfile(os.path.join(path, name)):
          os.remove(os.path.join(path, name))


def _rewrite_model_dirs(versions_text: str, rewrite: Callable[[str], str]) -> str:
  """versions.json with `rewrite` applied to the run directory of each session's command
  (the first start's and each resume's); the text as it is where it is no JSON object."""
  try:
    versions = json.loads(versions_text)
  except ValueError:
    return versions_text
  if not isinstance(versions, dict):
    return versions_text
  changed = False
  for session in [versions] + list(versions.get('resumes') or []):
    command = session.get('command') if isinstance(session, dict) else None
    if not isinstance(command, list):
      continue
    for index, argument in enumerate(command):
      if not isinstance(argument, str):
        continue
      if argument.startswith('--model_dir='):
        new = '--model_dir=' + rewrite(argument.split('=', 1)[1])
      elif index and command[index - 1] == '--model_dir':
        new = rewrite(argument)
      else:
        continue
      if new != argument:
        command[index] = new
        changed = True
  return json.dumps(versions, indent=2) if changed else versions_text


def _portable_versions(versions_text: str) -> str:
  """versions.json with each run directory in its commands as '<root>/<cell id>/seed_<s>'
  (the part of the path from the cell id on): an archive is kept (and committed) apart
  from the machine that trained."""
  def portable(model_dir):
    if model_dir.startswith(_ROOT_MARK + '/'):
      return model_dir
    parts = os.path.normpath(model_dir).split(os.sep)
    return '/'.join([_ROOT_MARK] + parts[-3:]) if len(parts) > 3 else model_dir
  return _rewrite_model_dirs(versions_text, portable)


def _local_versions(versions_text: str, root: str) -> str:
  """versions.json of an archive with '<root>' in its commands read as `root` (the root a
  record is restored or repaired into)."""
  def local(model_dir):
    if not model_dir.startswith(_ROOT_MARK + '/'):
      return model_dir
    return os.path.join(os.path.abspath(root), *model_dir.split('/')[1:])
  return _rewrite_model_dirs(versions_text, local)


def _check_identity(run: plan_lib.Run, archive: str, damaged: Sequence[str] = ()):
  """Raises ConfigError if the archive holds this cell and seed as a different run, or
  holds its files without the identity that bin/sweep --archive writes beside them.
  `damaged`: the archive copy's damaged files (check): a damaged identity is written again
  by the repair, not compared."""
  target = archived_dir(run, archive)
  if RUN_FILE in damaged or (MANIFEST_FILE in damaged and not run_files.read_json(
      target, RUN_FILE, unreadable_ok=True)):
    return
  try:
    archived = run_files.read_json(target, RUN_FILE)
  except (OSError, ValueError) as e:
    raise errors.ConfigError(f'{os.path.join(target, RUN_FILE)} cannot be read '
                             f'({type(e).__name__}: {e}); give this sweep its own --archive '
                             'directory, or remove the file if it is this sweep\'s') from None
  if archived is None:
    if any(os.path.exists(os.path.join(target, name)) for name in RECORD_FILES):
      raise errors.ConfigError(f'{target} holds a run that bin/sweep --archive did not write '
                               f'(no {RUN_FILE}); give this sweep its own --archive directory')
    return
  if archived != identity(run):
    raise errors.ConfigError(
        f'the archive {archive} holds {run.name} trained with gin files '
        f'{archived.get("gin_files")} and bindings {archived.get("gin_bindings")}, not '
        f'{list(run.gin_files)} and {list(run.gin_bindings)}; give this sweep its own '
        '--archive directory')


def _write_archive_files(run: plan_lib.Run, target: str, replace_cpu: bool = False):
  """The archive's own files of the run: its identity, and (where the run's versions.json
  does not name its CPU) the CPU of this machine, unless archived_on.json is there already
  (and not `replace_cpu`: the file is damaged)."""
  run_files.write_json(target, RUN_FILE, identity(run))
  archived_on = os.path.join(target, results_lib.ARCHIVED_ON_FILE)
  if results_lib.cpu_of(run.model_dir) is None and (
      replace_cpu or not os.path.exists(archived_on)) and not os.path.exists(
          os.path.join(run.model_dir, results_lib.ARCHIVED_ON_FILE)):
    run_files.write_json(target, results_lib.ARCHIVED_ON_FILE, {'cpu': _this_cpu()})


def save(run: plan_lib.Run, archive: str) -> bool:
  """Copies a finished run's record into the archive, replacing what an earlier copy held
  there (its files the run lacks removed), its manifest last; True if it was not archived
  yet."""
  if not run_files.finished(run.model_dir):
    raise ValueError(f'{run.name} is not finished: nothing to archive from {run.model_dir}')
  target = archived_dir(run, archive)
  kept = check(target)
  _check_identity(run, archive, kept.damaged)
  new = not _whole_and_finished(target, kept)
  os.makedirs(target, exist_ok=True)
  _write_archive_files(run, target, replace_cpu=results_lib.ARCHIVED_ON_FILE in kept.damaged)
  _copy(run.model_dir, target, root=None)
  return new


def write_root_manifest(run: plan_lib.Run):
  """The manifest of a run that finished in the root (its record files as they are)."""
  write_manifest(run.model_dir)


def _this_cpu() -> dict:
  """This machine's CPU as versions.json names it (model name and kernels' signature)."""
  from tf_ipmssl.run_dir import cpu_info  # pylint: disable=g-import-not-at-top
  return cpu_info.description()


def recordless(run: plan_lib.Run, archive: str) -> bool:
  """Whether the archive's runs_without_record.csv stands for this run (cell and seed)."""
  return run.seed in results_lib.recordless_seeds(archive, run.cell.id)


def restore(run: plan_lib.Run, archive: str) -> bool:
  """Writes the archived finished record into the run's directory if the run has none
  there yet (never over a started or finished run); True if it did."""
  source = archived_dir(run, archive)
  if not _whole_and_finished(source, check(source)) or os.path.exists(run.model_dir):
    return False
  _check_identity(run, archive)
  _copy(source, run.model_dir, root=_root_of(run))
  return True


def _root_of(run: plan_lib.Run) -> str:
  """The sweep root the run's directory is in (<root>/<cell id>/seed_<s>)."""
  root = run.model_dir
  for _ in range(len(run.cell.id.split('/')) + 1):
    root = os.path.dirname(root)
  return root


def _repair(run: plan_lib.Run, archive: str, damaged: Check, into_archive: bool,
            report: Callable[[str], None]):
  """Repairs the damaged copy of the run's record (the archive's if `into_archive`, else the
  root's) from the other, whole one; one line per file repaired or removed."""
  kept = archived_dir(run, archive)
  source, target = (run.model_dir, kept) if into_archive else (kept, run.model_dir)
  other = "the root's copy" if into_archive else "the archive's copy"
  whole_copy = MANIFEST_FILE in damaged.damaged or not os.path.exists(
      os.path.join(target, MANIFEST_FILE))
  before = {name: _describe_file(os.path.join(target, *name.split('/')))
            for name in record_files(target)}
  names = None if whole_copy else [n for n in damaged.damaged if n != RUN_FILE]
  if whole_copy and not into_archive:  # A root has archived_on.json only from a restore.
    names = [n for n in record_files(source)
             if n != results_lib.ARCHIVED_ON_FILE or n in before]
  if into_archive:
    _write_archive_files(run, kept, replace_cpu=(
        results_lib.ARCHIVED_ON_FILE in damaged.damaged or run_files.read_json(
            kept, results_lib.ARCHIVED_ON_FILE, unreadable_ok=True) is None))
  removed = _copy(source, target, root=None if into_archive else _root_of(run), names=names)
  for name in record_files(target):
    path = os.path.join(target, *name.split('/'))
    if name in damaged.damaged or before.get(name) != _describe_file(path):
      report(f'Repaired {path} from {other}')
  for name in removed:
    report(f'Removed {os.path.join(target, *name.split("/"))}: not part of the record '
           f'({other} has no such file)')
  if MANIFEST_FILE in damaged.damaged:  # Written anew by _copy, last.
    report(f'Repaired {os.path.join(target, MANIFEST_FILE)} from {other}')


def _set_aside(run: plan_lib.Run, damaged: Sequence[str]) -> List[str]:
  """Moves the root's damaged record files, its metrics.json and manifest to the run's
  damaged/ folder, so that the run is trained again (from its latest checkpoint)."""
  moved = []
  names = set(damaged) | {run_files.METRICS_FILE, MANIFEST_FILE}
  for name in sorted(names):
    source = os.path.join(run.model_dir, *name.split('/'))
    if os.path.isfile(source):
      target = os.path.join(run.model_dir, DAMAGED_DIR, *name.split('/'))
      os.makedirs(os.path.dirname(target), exist_ok=True)
      os.replace(source, target)
      moved.append(target)
  return moved


def sync(runs: Sequence[plan_lib.Run], archive: str,
         report: Callable[[str], None] = print) -> Tuple[int, int]:
  """Before a sweep: checks both copies of each run's record, repairs a damaged copy from a
  whole one (saying so with `report`, a line per file), archives each finished run of ROOT
  not archived yet, and restores each archived run that ROOT lacks. A run neither of whose
  copies is whole has its root's damaged files set aside, to train again. Returns
  (archived, restored) counts."""
  archived = restored = 0
  for run in runs:
    target = archived_dir(run, archive)
    if recordless(run, archive) and not run_files.finished(target):
      continue  # Stands as a row; bin/sweep leaves it out of the plan.
    in_root, in_archive = check(run.model_dir), check(target)
    if in_archive.state != ABSENT:
      _check_identity(run, archive, in_archive.damaged)
    try:
      done = _sync_run(run, archive, in_root, in_archive, report)
    except OSError as e:  # A read-only or full disk: the run's record as it was.
      where = f': {e.filename}' if e.filename else ''
      report(f'{run.name}: its record could not be synced with the archive '
             f'({e.strerror or type(e).__name__}{where}); the other runs go on')
      continue
    archived += done == 'archived'
    restored += done == 'restored'
  return archived, restored


def _sync_run(run: plan_lib.Run, archive: str, in_root: Check, in_archive: Check,
              report: Callable[[str], None]) -> Optional[str]:
  """sync of one run whose copies were checked: 'archived', 'restored' or None."""
  target = archived_dir(run, archive)
  root_whole = _whole_and_finished(run.model_dir, in_root)
  archive_whole = _whole_and_finished(target, in_archive)
  if root_whole and archive_whole:
    if in_root.state == WHOLE and in_archive.state == UNVERIFIED:
      # The archive's copy lost its manifest: nothing vouches for it, so the root's verified
      # copy is kept there anew (its manifest last).
      save(run, archive)
      report(f"Repaired {os.path.join(target, MANIFEST_FILE)} from the root's copy")
    return None
  if root_whole:
    if in_root.state == UNVERIFIED:  # Finished outside a sweep, or before manifests.
      write_manifest(run.model_dir)
    if in_archive.state == DAMAGED:
      _repair(run, archive, in_archive, into_archive=True, report=report)
      return None
    return 'archived' if save(run, archive) else None
  if archive_whole:
    if in_root.state == DAMAGED:
      _repair(run, archive, in_root, into_archive=False, report=report)
      return None
    return 'restored' if restore(run, archive) else None
  if DAMAGED in (in_root.state, in_archive.state):
    named = [os.path.join(run.model_dir, *name.split('/')) for name in in_root.damaged] + [
        os.path.join(target, *name.split('/')) for name in in_archive.damaged]
    moved = _set_aside(run, in_root.damaged)
    aside = (f' (the root\'s record files moved to {os.path.join(run.model_dir, DAMAGED_DIR)})'
             if moved else '')
    report(f'{run.name}: no whole copy of its record ({", ".join(named)} damaged); '
           f'training it again{aside}')
  return None
