"""A normal resume, evaluation and export print no TensorFlow warning: a restore meant to be
partial says so (`expect_partial`), so TensorFlow has nothing to warn about when the
checkpoint object goes, and one meant to be complete still asserts that it is."""
import pytest

from tests.training import runs

# TensorFlow's warnings of a restore that left values of the checkpoint unread.
WARNINGS = ('being deleted with unrestored values',
            'Value in checkpoint could not be found in the restored object')


def _assert_quiet(result):
  assert result.returncode == 0, result.stdout + result.stderr
  for warning in WARNINGS:
    assert warning not in result.stderr, result.stderr


@pytest.fixture(scope='module')
def resumed_run(data_dir, tmp_path_factory):
  """A run killed (SIGKILL) after its first checkpoint, then rerun to the end."""
  model_dir = str(tmp_path_factory.mktemp('run') / 'model')
  bindings = runs.tiny_bindings(data_dir)
  killed = runs.run_train(model_dir, bindings, fault='checkpoint_written#1=kill')
  assert killed.returncode == -9 and 'fault injected' in killed.stderr, killed.stderr
  resumed = runs.run_train(model_dir, bindings)
  assert 'Resuming from' in resumed.stdout, resumed.stdout + resumed.stderr
  return model_dir, resumed


def test_a_resumed_run_prints_no_restore_warning(resumed_run):
  _assert_quiet(resumed_run[1])


@pytest.mark.parametrize('program, flags', [
    ('evaluate', ['--checkpoint=latest']), ('evaluate', ['--checkpoint=best']),
    ('evaluate', ['--checkpoint=latest', '--weights=trained']),
    ('export', ['--checkpoint=latest']), ('export', ['--checkpoint=best'])])
def test_evaluate_and_export_print_no_restore_warning(resumed_run, tmp_path, program, flags):
  model_dir, _ = resumed_run
  if program == 'export':
    flags = flags + [f'--export_dir={tmp_path / "export"}']
  _assert_quiet(runs.run_program(program, f'--model_dir={model_dir}', *flags))


def test_a_restore_to_train_still_asserts_what_training_needs(resumed_run, tmp_path):
  """A checkpoint without the critic's optimizer (what training depends on) is refused."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  run = runs.restore_run(resumed_run[0])
  run.restore(run.manager.latest_checkpoint)
  partial = tf.train.Checkpoint(**{k: v for k, v in run.checkpointed.items()
                                   if k != 'critic_optimizer'})
  path = partial.write(str(tmp_path / 'partial' / 'ckpt-4'))
  with pytest.raises(AssertionError, match='not bound to checkpointed values'):
    runs.restore_run(resumed_run[0]).restore_to_train(path)
