"""User mistakes give one clear message and exit status 1, never a traceback."""
import os

import pytest

from tests.reliability import checks
from tests.training import runs


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  return runs.make_data(tmp_path_factory.mktemp('data'))


def _assert_user_error(result, *fragments, below=()):
  """Exit status 1, no traceback, one `error:` line holding each fragment (what is wrong and
  the fix); `below`: fragments of the lines that follow it (a message of several lines)."""
  line = checks.assert_one_error_line(result, *fragments)
  after = result.stderr.split(line, 1)[1]
  for fragment in below:
    assert fragment in after, (fragment, result.stderr)


def test_bad_gin_binding(data_dir, tmp_path):
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(data_dir) + ['train.stepz = 3'])
  _assert_user_error(result, "error: unknown train binding(s) ['stepz'] (did you mean "
                     'train.steps?)')
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(data_dir) + ['ssl.stepz = 3'])
  _assert_user_error(result, "doesn't have a parameter named 'stepz'")


def test_a_semi_supervised_setting_bound_at_its_old_place(data_dir, tmp_path):
  result = runs.run_train(str(tmp_path / 'm'),
                          runs.tiny_bindings(data_dir) + ["train.formulation = 'plain'"])
  _assert_user_error(result, 'error: train.formulation is now a setting of the algorithm: '
                     'bind ssl.formulation instead')
  assert not os.path.exists(tmp_path / 'm')


def test_a_bad_builder_setting_is_refused_before_the_data_is_read(tmp_path):
  """The RunConfig validates every group when made: with no dataset where the run would
  look, the refusal is the setting's, not the missing data's, and no model dir is made."""
  empty = tmp_path / 'empty'
  empty.mkdir()
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(
      str(empty), **{'build_critic.width': 0}))
  _assert_user_error(result, 'error: build_critic.width must be a number > 0.0, got 0')
  assert 'not found' not in result.stderr
  assert not os.path.exists(tmp_path / 'm')


def test_bad_gin_file_path(data_dir, tmp_path):
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(data_dir),
                          gin_files=['gin/does_not_exist.gin'])
  _assert_user_error(result, 'gin/does_not_exist.gin does not exist')


def test_missing_dataset(tmp_path):
  empty = tmp_path / 'empty'
  empty.mkdir()
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(
      str(empty), dataset='cifar10', **{'build_ssl_data.source': "'auto'"}))
  _assert_user_error(result, "'cifar10' not found", below=(
      str(empty), 'To get it:', f'tfds build cifar10 --data_dir={empty}'))
  assert not os.path.exists(tmp_path / 'm' / 'checkpoints')


def test_impossible_label_count(data_dir, tmp_path):
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(
      data_dir, **{'build_ssl_data.num_labeled': 25}))
  _assert_user_error(result, 'num_labeled=25 is not divisible by num_classes=10; use a '
                     'multiple of 10 (e.g. 20)')


def test_constraint_on_missing_component(data_dir, tmp_path):
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(
      data_dir, **{'ssl.formulation': "'plain'", 'Fisher.component': "'f_neg'"}))
  _assert_user_error(result, "'plain' formulation does not have", "use a K+1 formulation or "
                     "put the constraint on 'f'")


def test_design_card_config_fails_fast_without_cifar10(tmp_path, monkeypatch):
  empty = tmp_path / 'home'
  empty.mkdir()
  monkeypatch.setenv('HOME', str(empty))
  monkeypatch.delenv('TF_IPMSSL_DATA_DIR', raising=False)
  result = runs.run_train(str(tmp_path / 'm'), [],
                          gin_files=[str(runs.REPO_ROOT / 'gin' / 'cifar_fisher_ln.gin')])
  _assert_user_error(result, "'cifar10' not found", below=('To get it:',
                                                            'cifar-10-python.tar.gz'))


def test_nan_stops_and_keeps_last_good_checkpoint(data_dir, tmp_path):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path / 'm')
  # A huge learning rate: step 1's loss is finite, its update blows the weights up.
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{
      'train.mode': "'supervised'", 'train.critic_learning_rate': 1e30, 'train.steps': 6, 'train.log_every': 1,
      'train.checkpoint_every': 1, 'train.eval_every': 100}))
  _assert_user_error(result, 'NaN or Inf', 'left intact')
  latest = tf.train.latest_checkpoint(os.path.join(model_dir, 'checkpoints'))
  assert latest is not None
  values = runs.checkpoint_values(latest)
  weights = {k: v for k, v in values.items() if k.startswith(('critic/', 'critic_optimizer/'))}
  assert len(weights) > 10
  assert all(np.all(np.isfinite(v)) for v in weights.values()
             if np.issubdtype(np.asarray(v).dtype, np.floating))
