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

DIR has ROOT's layout, so `bin/sweep --tables_only --root=DIR` builds the tables from the
archive alone. A record is only ever written for a run whose identity matches the archived
one: an archive holding the same cell and seed trained with other gin files or bindings is
refused with a message, never overwritten or mixed into the tables.

A run whose record was lost can still stand in an archive as one row of
DIR/runs_without_record.csv (runs.csv's columns, tables.RECORDLESS_ROWS_FILE): the sweep
counts it finished and never trains it again, and the tables read the row.
"""
import os
import shutil
from typing import Sequence, Tuple

from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import plan as plan_lib
from tf_ipmssl.sweep import tables as tables_lib

RUN_FILE = 'sweep_run.json'
# metrics.json last: a copy cut short leaves no finished record behind.
RECORD_FILES = (run_files.CONFIG_FILE, run_files.RUN_CONFIG_FILE,
                run_files.OPERATIVE_CONFIG_FILE, run_files.VERSIONS_FILE,
                tables_lib.ARCHIVED_ON_FILE, run_files.DATASET_FILE, run_files.METRICS_FILE)
# Folders copied whole, before metrics.json: the evaluations' TensorBoard scalars (the
# trainer writes its images and the training scalars to train/, which stays behind).
RECORD_DIRS = ('eval',)


def identity(run: plan_lib.Run) -> dict:
  """What makes two runs the same run: the cell, the seed and bin/train's gin arguments."""
  return {'cell': run.cell.id, 'seed': run.seed, 'gin_files': list(run.gin_files),
          'gin_bindings': list(run.gin_bindings)}


def archived_dir(run: plan_lib.Run, archive: str) -> str:
  return plan_lib.run_dir(archive, run.cell, run.seed)


def _copy_binary(source: str, target: str):
  """`source` to `target` whole: a reader sees no part of it (a copy, then a rename)."""
  shutil.copyfile(source, target + '.tmp')
  os.replace(target + '.tmp', target)


def _copy(source_dir: str, target_dir: str):
  """The record files and folders that exist in source_dir, each file written whole;
  metrics.json last."""
  os.makedirs(target_dir, exist_ok=True)
  for folder in RECORD_DIRS:
    source = os.path.join(source_dir, folder)
    if os.path.isdir(source):
      os.makedirs(os.path.join(target_dir, folder), exist_ok=True)
      for name in sorted(os.listdir(source)):
        if os.path.isfile(os.path.join(source, name)):
          _copy_binary(os.path.join(source, name), os.path.join(target_dir, folder, name))
  for name in RECORD_FILES:
    source = os.path.join(source_dir, name)
    if os.path.exists(source):
      text = run_files.read_text(source)
      if name == run_files.VERSIONS_FILE:
        text = _without_machine_path(text, source_dir)
      run_files.write_text(os.path.join(target_dir, name), text)


def _without_machine_path(versions_text: str, model_dir: str) -> str:
  """versions.json with the run directory in its command as '<root>/<cell
  id>/seed_<s>': an archive is kept (and committed) apart from the machine that trained."""
  where = os.path.abspath(model_dir)
  portable = '/'.join(['<root>'] + where.split(os.sep)[-3:])
  return versions_text.replace(f'"--model_dir={where}"', f'"--model_dir={portable}"')


def _check_identity(run: plan_lib.Run, archive: str):
  """Raises ConfigError if the archive holds this cell and seed as a different run, or
  holds its files without the identity that bin/sweep --archive writes beside them."""
  target = archived_dir(run, archive)
  archived = run_files.read_json(target, RUN_FILE)
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


def save(run: plan_lib.Run, archive: str) -> bool:
  """Copies a finished run's record into the archive; True if it was not archived yet."""
  if not run_files.finished(run.model_dir):
    raise ValueError(f'{run.name} is not finished: nothing to archive from {run.model_dir}')
  _check_identity(run, archive)
  target = archived_dir(run, archive)
  new = not run_files.finished(target)
  os.makedirs(target, exist_ok=True)
  run_files.write_json(target, RUN_FILE, identity(run))
  if tables_lib.cpu_of(run.model_dir) is None and not os.path.exists(
      os.path.join(target, tables_lib.ARCHIVED_ON_FILE)):
    run_files.write_json(target, tables_lib.ARCHIVED_ON_FILE, {'cpu': _this_cpu()})
  _copy(run.model_dir, target)
  return new


def _this_cpu() -> dict:
  """This machine's CPU as versions.json names it (model name and kernels' signature)."""
  from tf_ipmssl.run_dir import cpu_info  # pylint: disable=g-import-not-at-top
  return cpu_info.description()


def recordless(run: plan_lib.Run, archive: str) -> bool:
  """Whether the archive's runs_without_record.csv stands for this run (cell and seed)."""
  return run.seed in tables_lib.recordless_seeds(archive, run.cell.id)


def restore(run: plan_lib.Run, archive: str) -> bool:
  """Writes the archived finished record into the run's directory if the run has none
  there yet (never over a started or finished run); True if it did."""
  source = archived_dir(run, archive)
  if not run_files.finished(source) or os.path.exists(run.model_dir):
    return False
  _check_identity(run, archive)
  _copy(source, run.model_dir)
  return True


def sync(runs: Sequence[plan_lib.Run], archive: str) -> Tuple[int, int]:
  """Before a sweep: archives each finished run of ROOT not archived yet, and restores each
  archived run that ROOT lacks. Returns (archived, restored) counts."""
  archived = restored = 0
  for run in runs:
    if recordless(run, archive) and not run_files.finished(archived_dir(run, archive)):
      continue  # Stands as a row; bin/sweep leaves it out of the plan.
    if run_files.finished(run.model_dir):
      if not run_files.finished(archived_dir(run, archive)):
        archived += save(run, archive)
      else:
        _check_identity(run, archive)
    else:
      restored += restore(run, archive)
  return archived, restored
