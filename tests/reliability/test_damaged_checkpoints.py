"""A damaged checkpoint is set aside, not fatal: random bytes in the latest checkpoint's data
make the run resume from the previous one and end with an uninterrupted run's variables, bit
for bit (the fault campaign, tests/reliability/campaign.py, compares everything else a run
leaves); a truncated .index is one line in bin/evaluate and bin/export, and in bin/train a
resume from the previous checkpoint. A newest checkpoint
whose files are gone (the checkpoint list still naming it) or whose data is cut short is
skipped the same way, in one line. An old checkpoint that TensorFlow was deleting when the
trainer was killed is not damage: its deletion is completed without a word."""
import os
import shlex
import shutil
import signal
import subprocess

import numpy as np
import pytest

from tests.reliability import checks
from tests.training import runs


def _bindings(data_dir, steps, keep=3):
  return runs.tiny_bindings(data_dir, **{
      'train.steps': steps, 'train.checkpoint_every': 2, 'train.eval_every': 2,
      'train.keep_checkpoints': keep, 'train.deterministic_ops': True})


@pytest.fixture(scope='module')
def six_steps(data_dir, tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp('run') / 'model')
  result = runs.run_train(model_dir, _bindings(data_dir, 6))
  assert result.returncode == 0, result.stderr
  return model_dir


@pytest.fixture(scope='module')
def eight_steps(data_dir, tmp_path_factory):
  """The uninterrupted 8-step run the resumed ones must equal."""
  model_dir = str(tmp_path_factory.mktemp('reference') / 'model')
  result = runs.run_train(model_dir, _bindings(data_dir, 8))
  assert result.returncode == 0, result.stderr
  return model_dir


def _assert_same_variables(model_dir, reference_dir, checkpoint='ckpt-8'):
  """`checkpoint` of both runs holds the same variables, bit for bit (save_counter aside)."""
  expected = runs.checkpoint_values(os.path.join(reference_dir, 'checkpoints', checkpoint))
  actual = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', checkpoint))
  assert expected.keys() == actual.keys()
  for name in expected:
    if not name.startswith('save_counter'):
      np.testing.assert_array_equal(actual[name], expected[name],
                                    err_msg=f'{checkpoint} {name}')


def _data_file(model_dir, step):
  directory = os.path.join(model_dir, 'checkpoints')
  (name,) = [n for n in os.listdir(directory) if n.startswith(f'ckpt-{step}.data')]
  return os.path.join(directory, name)


def test_random_bytes_in_the_latest_checkpoint_resume_from_the_previous(
    data_dir, six_steps, eight_steps, tmp_path):
  model_dir = str(tmp_path / 'damaged_run')
  shutil.copytree(six_steps, model_dir)
  data_file = _data_file(model_dir, 6)
  with open(data_file, 'r+b') as f:
    size = f.seek(0, os.SEEK_END)
    f.seek(size // 2)
    f.write(np.random.default_rng(0).bytes(64))
  config_before = open(os.path.join(model_dir, 'config.gin')).read()

  result = runs.run_train(model_dir, _bindings(data_dir, 8))
  assert result.returncode == 0, result.stderr
  assert 'Traceback' not in result.stderr and 'Instructions for updating' not in result.stderr
  checkpoints = os.path.join(model_dir, 'checkpoints')
  damaged = [l for l in result.stdout.splitlines() if 'is damaged' in l]
  assert len(damaged) == 1, result.stdout
  assert damaged[0].startswith(f'checkpoint {checkpoints}/ckpt-6 is damaged (')
  assert 'Checksum does not match' in damaged[0]
  assert damaged[0].endswith(f'moved it to {model_dir}/damaged/checkpoints/')
  assert f'Resuming from {checkpoints}/ckpt-4 (step 4)' in result.stdout
  assert os.path.isfile(os.path.join(model_dir, 'damaged', 'checkpoints',
                                     os.path.basename(data_file)))
  assert open(os.path.join(model_dir, 'config.gin')).read().count('train.steps = 8') == 1
  assert config_before.count('train.steps = 6') == 1
  _assert_same_variables(model_dir, eight_steps)


def _remove_files(model_dir, step):
  directory = os.path.join(model_dir, 'checkpoints')
  for name in os.listdir(directory):
    if name.startswith(f'ckpt-{step}.'):
      os.remove(os.path.join(directory, name))


def _truncate_data(model_dir, step):
  data_file = _data_file(model_dir, step)
  with open(data_file, 'r+b') as f:
    f.truncate(f.seek(0, os.SEEK_END) // 2)


@pytest.mark.parametrize('harm, skipped', [
    (_remove_files, 'is missing (none of its files is left); left it out of the checkpoint '
                    'list'),
    (_truncate_data, 'is damaged ('),
], ids=['files_gone', 'data_truncated'])
def test_a_missing_or_cut_newest_checkpoint_resumes_from_the_newest_intact_one(
    data_dir, six_steps, eight_steps, tmp_path, harm, skipped):
  """ckpt-6's files gone (its checkpoint list still naming it) or its data cut short: the
  rerun resumes from ckpt-4 (not step 0), says so in one line naming ckpt-6, and ends with
  the variables of the uninterrupted run."""
  model_dir = str(tmp_path / 'run')
  shutil.copytree(six_steps, model_dir)
  harm(model_dir, 6)
  checkpoints = os.path.join(model_dir, 'checkpoints')
  assert 'ckpt-6' in open(os.path.join(checkpoints, 'checkpoint')).read()

  result = runs.run_train(model_dir, _bindings(data_dir, 8))
  assert result.returncode == 0, result.stderr
  output = result.stdout + result.stderr
  assert 'Traceback' not in output and "Couldn't match files" not in output, output
  skips = [l for l in result.stdout.splitlines() if 'ckpt-6' in l]
  assert len(skips) == 1, result.stdout
  assert skips[0].startswith(f'checkpoint {checkpoints}/ckpt-6 {skipped}'), skips[0]
  assert f'Resuming from {checkpoints}/ckpt-4 (step 4)' in result.stdout
  assert 'step 6/8' in result.stdout and 'step 2/8' not in result.stdout, result.stdout
  _assert_same_variables(model_dir, eight_steps)
  # ckpt-4, which the run resumed from, stays in the checkpoint list as in an uninterrupted
  # run (its time kept with it: not left out of the list, its files never deleted).
  assert _listed(model_dir) == _listed(eight_steps) == ['ckpt-4', 'ckpt-6', 'ckpt-8']
  assert sorted({name.split('.')[0] for name in os.listdir(checkpoints)
                 if name.startswith('ckpt-')}) == ['ckpt-4', 'ckpt-6', 'ckpt-8']  # ckpt-2's gone.


def _listed(model_dir):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  state = tf.train.get_checkpoint_state(os.path.join(model_dir, 'checkpoints'))
  return [os.path.basename(path) for path in state.all_model_checkpoint_paths]


def _truncate_index(model_dir, folder, step):
  index = os.path.join(model_dir, folder, f'ckpt-{step}.index')
  with open(index, 'r+b') as f:
    f.truncate(10)
  return index


def test_a_truncated_index_is_one_line_in_evaluate_and_export(six_steps, tmp_path):
  model_dir = str(tmp_path / 'run')
  shutil.copytree(six_steps, model_dir)
  _truncate_index(model_dir, 'checkpoints', 6)
  for program, extra in (('evaluate', ['--checkpoint=latest']),
                         ('export', ['--checkpoint=latest',
                                     f'--export_dir={tmp_path / "exported"}'])):
    result = runs.run_program(program, f'--model_dir={model_dir}', *extra)
    checks.assert_one_error_line(result, f'checkpoint {model_dir}/checkpoints/ckpt-6 is damaged and cannot be '
                      'read')


def test_a_truncated_index_in_train_falls_back_in_one_line(data_dir, six_steps, eight_steps,
                                                           tmp_path):
  model_dir = str(tmp_path / 'run')
  shutil.copytree(six_steps, model_dir)
  _truncate_index(model_dir, 'checkpoints', 6)
  result = runs.run_train(model_dir, _bindings(data_dir, 8))
  assert result.returncode == 0, result.stderr
  damaged = [l for l in result.stdout.splitlines() if 'is damaged' in l]
  assert len(damaged) == 1 and 'ckpt-6 is damaged' in damaged[0], result.stdout
  checkpoints = os.path.join(model_dir, 'checkpoints')
  assert f'Resuming from {checkpoints}/ckpt-4 (step 4)' in result.stdout  # Not from step 0.
  assert 'step 2/8' not in result.stdout and 'Finished 8 steps' in result.stdout
  _assert_same_variables(model_dir, eight_steps)


def test_no_intact_checkpoint_is_one_line_and_rewrites_nothing(data_dir, six_steps, tmp_path):
  model_dir = str(tmp_path / 'run')
  shutil.copytree(six_steps, model_dir)
  for step in (2, 4, 6):
    _truncate_index(model_dir, 'checkpoints', step)
  config = open(os.path.join(model_dir, 'config.gin')).read()
  versions = open(os.path.join(model_dir, 'versions.json')).read()
  result = runs.run_train(model_dir, _bindings(data_dir, 8))
  checks.assert_one_error_line(result, f'no intact checkpoint is left in {model_dir}/checkpoints',
                              'start again with a new --model_dir')
  assert open(os.path.join(model_dir, 'config.gin')).read() == config
  assert open(os.path.join(model_dir, 'versions.json')).read() == versions


@pytest.fixture(scope='module')
def killed_while_deleting(data_dir, tmp_path_factory):
  """A 6-step run keeping 2 checkpoints, killed as step 6's save deletes ckpt-2: its .index
  is gone, its data not yet, and the checkpoint list still names it."""
  model_dir = str(tmp_path_factory.mktemp('run') / 'model')
  killed = runs.run_train(model_dir, _bindings(data_dir, 6, keep=2),
                          fault='checkpoint_index_deleted=kill')
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  checkpoints = os.path.join(model_dir, 'checkpoints')
  assert 'ckpt-2' in open(os.path.join(checkpoints, 'checkpoint')).read()
  assert not os.path.exists(os.path.join(checkpoints, 'ckpt-2.index'))
  return model_dir


def test_a_checkpoint_being_deleted_at_a_kill_is_not_reported_damaged(
    data_dir, six_steps, killed_while_deleting, tmp_path):
  model_dir = str(tmp_path / 'run')
  shutil.copytree(killed_while_deleting, model_dir)
  result = runs.run_train(model_dir, _bindings(data_dir, 6, keep=2))
  assert result.returncode == 0, result.stderr
  assert 'damaged' not in result.stdout + result.stderr
  assert not os.path.exists(os.path.join(model_dir, 'damaged'))
  checkpoints = os.path.join(model_dir, 'checkpoints')
  assert not any(n.startswith('ckpt-2.') for n in os.listdir(checkpoints))
  expected = runs.checkpoint_values(os.path.join(six_steps, 'checkpoints', 'ckpt-6'))
  actual = runs.checkpoint_values(os.path.join(checkpoints, 'ckpt-6'))
  assert expected.keys() == actual.keys()
  for name in expected:
    np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


@checks.needs_mount
def test_resuming_on_a_read_only_disk_says_so_in_one_line(
    data_dir, killed_while_deleting, tmp_path):
  model_dir = str(tmp_path / 'run')
  shutil.copytree(killed_while_deleting, model_dir)
  before = sorted(os.listdir(model_dir))
  read_only = f"mount --bind '{model_dir}' '{model_dir}' && mount -o remount,bind,ro '{model_dir}'"
  result = checks.in_private_mount(read_only, model_dir, _bindings(data_dir, 6, keep=2))
  line = checks.assert_one_error_line(result, model_dir, 'Read-only file system',
                                      'rerun the same command')
  assert 'damaged' not in result.stdout + line
  assert sorted(os.listdir(model_dir)) == before


@pytest.mark.integration
def test_a_relative_model_dir_resumes_after_a_kill(data_dir, tmp_path):
  """The checkpoint list names checkpoints relative to a relative --model_dir; resuming reads
  them where they are (they were once taken for damaged, set aside and the run refused)."""
  killed = runs.run_train('run', _bindings(data_dir, 6), fault='checkpoint_written#2=kill',
                          cwd=tmp_path)
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  result = runs.run_train('run', _bindings(data_dir, 6), cwd=tmp_path)
  assert result.returncode == 0, result.stdout + result.stderr
  assert 'damaged' not in result.stdout + result.stderr
  assert not os.path.exists(tmp_path / 'run' / 'damaged')
  assert 'checkpoint' in os.listdir(tmp_path / 'run' / 'checkpoints')


def test_the_checkpoint_list_of_a_relative_directory_is_read_where_it_is(tmp_path,
                                                                         monkeypatch):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.run_dir import checkpoint_integrity  # pylint: disable=g-import-not-at-top
  monkeypatch.chdir(tmp_path)
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)),
                                       os.path.join('run', 'checkpoints'), max_to_keep=3)
  manager.save()
  manager.save()
  newest, messages = checkpoint_integrity.set_aside_damaged('run', 'run/checkpoints')
  assert (newest, messages) == ('run/checkpoints/ckpt-2', [])
  assert os.path.exists('run/checkpoints/checkpoint') and not os.path.exists('run/damaged')


def test_a_newest_checkpoint_without_files_is_left_out_of_the_list(tmp_path):
  """The checkpoint list names ckpt-3, whose files are gone: it is left out and ckpt-2 is the
  newest intact one; a newest checkpoint that lost only its .index is damaged (its data set
  aside); with no checkpoint left, the list goes."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.run_dir import checkpoint_integrity  # pylint: disable=g-import-not-at-top
  directory = str(tmp_path / 'checkpoints')
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), directory,
                                       max_to_keep=3)
  for _ in range(3):
    manager.save()

  def remove(prefix):
    for name in os.listdir(directory):
      if name.startswith(prefix):
        os.remove(os.path.join(directory, name))

  before = tf.train.get_checkpoint_state(directory)
  times = list(before.all_model_checkpoint_timestamps)
  remove('ckpt-3.')
  assert checkpoint_integrity.listed(directory) == [f'{directory}/ckpt-{n}' for n in (1, 2, 3)]
  assert checkpoint_integrity.set_aside_damaged(str(tmp_path), directory) == (
      f'{directory}/ckpt-2',
      [f'checkpoint {directory}/ckpt-3 is missing (none of its files is left); left it out of '
       'the checkpoint list'])
  assert tf.train.latest_checkpoint(directory) == f'{directory}/ckpt-2'
  # Each kept checkpoint keeps its time, so that a new manager (a resumed run) keeps them in
  # its list, and deletes their files in turn, as an uninterrupted run's would.
  after = tf.train.get_checkpoint_state(directory)
  assert list(after.all_model_checkpoint_timestamps) == times[:2]
  assert after.last_preserved_timestamp == before.last_preserved_timestamp
  assert tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), directory,
                                    max_to_keep=3).checkpoints == [
                                        f'{directory}/ckpt-1', f'{directory}/ckpt-2']
  remove('ckpt-2.index')
  assert checkpoint_integrity.set_aside_damaged(str(tmp_path), directory) == (
      f'{directory}/ckpt-1',
      [f'checkpoint {directory}/ckpt-2 is damaged (its .index file is missing); moved it to '
       f'{tmp_path}/damaged/checkpoints/'])
  assert checkpoint_integrity.listed(directory) == [f'{directory}/ckpt-1']
  assert any(n.startswith('ckpt-2.data') for n in os.listdir(tmp_path / 'damaged' / 'checkpoints'))
  remove('ckpt-1.')
  assert checkpoint_integrity.set_aside_damaged(str(tmp_path), directory)[0] is None
  assert checkpoint_integrity.listed(directory) == []


@pytest.mark.integration  # Two runs, one stopped by the full disk and resumed.
@checks.needs_mount
def test_a_full_disk_keeps_the_checkpoints_it_had_and_the_rerun_with_room_ends_as_uninterrupted(
    data_dir, eight_steps, tmp_path):
  """The 8-step run on a tmpfs too small for it stops in one line; the checkpoints it lists
  then are intact (each reads, and equals the uninterrupted run's where that keeps it), and
  the same command, once the disk has room, resumes and ends with the uninterrupted run's
  variables, bit for bit. Both happen in one mount namespace (its tmpfs is gone when it
  ends), the model dir copied out at each stage."""
  disk_kib = 2200  # Full at ckpt-8's save, with ckpt-2, 4 and 6 kept (1,000 KiB: at ckpt-4's).
  disk, out = tmp_path / 'disk', tmp_path / 'out'
  disk.mkdir()
  out.mkdir()
  model_dir = str(disk / 'm')
  command = shlex.join(runs.train_command(model_dir, _bindings(data_dir, 8)))
  script = (f"mount -t tmpfs -o size={disk_kib}k tmpfs '{disk}' || exit 2\n"
            f"{command} > '{out}/full.out' 2> '{out}/full.err'; echo $? > '{out}/full.rc'\n"
            f"cp -a '{model_dir}' '{out}/after_fault'\n"
            f"mount -o remount,size=64m '{disk}' || exit 2\n"
            f"{command} > '{out}/room.out' 2> '{out}/room.err'; echo $? > '{out}/room.rc'\n"
            f"cp -a '{model_dir}' '{out}/after_rerun'\n")
  setup = subprocess.run(['unshare', '-m', 'sh', '-c', script], capture_output=True,
                         text=True, env=runs.environment(), cwd=str(runs.REPO_ROOT),
                         timeout=1200)
  assert setup.returncode == 0, setup.stderr

  def result(stage):
    return subprocess.CompletedProcess(
        [], int((out / f'{stage}.rc').read_text()), (out / f'{stage}.out').read_text(),
        (out / f'{stage}.err').read_text())

  full = result('full')
  checks.assert_one_error_line(full, 'rerun the same command')
  assert 'No space left on device' in full.stderr or 'out of space' in full.stderr
  after_fault = str(out / 'after_fault')
  listed = _listed(after_fault)
  assert listed, 'the disk filled before the first checkpoint: the test needs a larger disk'
  reference = _listed(eight_steps)
  for name in listed:  # Each reads; those the reference keeps equal its, bit for bit.
    if name in reference:
      _assert_same_variables(after_fault, eight_steps, name)
    else:
      runs.checkpoint_values(os.path.join(after_fault, 'checkpoints', name))

  room = result('room')
  assert room.returncode == 0, room.stderr[-3000:]
  assert 'Traceback' not in room.stdout + room.stderr
  assert f'Resuming from {model_dir}/checkpoints/' in room.stdout, room.stdout
  _assert_same_variables(str(out / 'after_rerun'), eight_steps)
