"""Augmentation in a run (docs/algorithm.md#augmentation): its settings validated, recorded and
read back; off, the trainer hands the pipelines nothing (a run is today's bit for bit); on,
a run killed after a checkpoint and resumed ends with the weights of an uninterrupted one, and
the supervised baseline augments its labeled stream."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs
from tf_ipmssl import errors
from tf_ipmssl.data import augmentation
from tf_ipmssl.objectives import fisher
from tf_ipmssl.training import run_config
from tf_ipmssl.training import trainer

AUGMENTED = {'augmentation.labeled_flip': True, 'augmentation.labeled_translate': 2,
             'augmentation.unlabeled_flip': True, 'augmentation.unlabeled_translate': 3}


def _config(mode='ssl', **bindings):
  settings = dict(constraints=[fisher.Fisher()]) if mode == 'ssl' else None
  return run_config.RunConfig.create(mode=mode, steps=1, settings=settings, **bindings)


def test_off_by_default_the_trainer_passes_no_augmentation():
  config = _config()
  assert all(not a.active for a in config.augmentations.values())
  assert trainer._augment_fn(config, 'labeled') is None  # pylint: disable=protected-access
  assert trainer._augment_fn(config, 'unlabeled') is None  # pylint: disable=protected-access
  on = _config(augmentation={'unlabeled_translate': 2})
  assert trainer._augment_fn(on, 'labeled') is None  # pylint: disable=protected-access
  assert trainer._augment_fn(on, 'unlabeled') is not None  # pylint: disable=protected-access


def test_the_settings_are_recorded_and_read_back():
  config = _config(augmentation={'labeled_flip': True, 'labeled_translate': 2,
                                 'unlabeled_flip': True})
  assert config.augmentations == {'labeled': augmentation.Augmentation(True, 2),
                                  'unlabeled': augmentation.Augmentation(True, 0)}
  assert augmentation.describe(config.augmentations) == (
      'labeled flip + translate 2; unlabeled flip')
  record = json.loads(json.dumps(config.to_json()))
  assert record['augmentation'] == {
      'labeled_flip': True, 'labeled_translate': 2, 'unlabeled_flip': True,
      'unlabeled_translate': 0}
  assert run_config.RunConfig.from_json(record).augmentations == config.augmentations
  # A record written before augmentation existed reads as off.
  del record['augmentation']
  old = run_config.RunConfig.from_json(record)
  assert augmentation.describe(old.augmentations) == 'none'
  assert ('augmentation.labeled_flip', True, False) in config.differing_settings(old)


@pytest.mark.parametrize('given, mode, message', [
    ({'labeled_translate': -1}, 'ssl', 'augmentation.labeled_translate must be an integer >= 0'),
    ({'unlabeled_translate': 1.5}, 'ssl', 'augmentation.unlabeled_translate must be an integer'),
    ({'labeled_flip': 1}, 'ssl', 'augmentation.labeled_flip must be True or False'),
    ({'labeled_translate': 32}, 'ssl', 'choose at most 31'),
    ({'unlabeled_flip': True}, 'supervised', 'reads no unlabeled stream'),
    ({'nonsense': 1}, 'ssl', 'augmentation has no setting'),
])
def test_bad_settings_are_config_errors(given, mode, message):
  with pytest.raises(errors.ConfigError, match=message):
    _config(mode, augmentation=given)


def _bindings(data_dir, **overrides):
  return runs.tiny_bindings(data_dir, **{
      'train.steps': 6, 'train.checkpoint_every': 2, 'train.eval_every': 3,
      'train.deterministic_ops': True, 'train.export_classifier': False, **overrides})


def _weights(model_dir):
  values = runs.checkpoint_values(tf.train.latest_checkpoint(
      os.path.join(model_dir, 'checkpoints')))
  return {k: v for k, v in values.items() if not k.startswith('save_counter')}


@pytest.mark.integration
def test_an_augmented_run_killed_and_resumed_matches_an_uninterrupted_one(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  reference_dir, killed_dir = str(tmp_path / 'reference'), str(tmp_path / 'killed')
  reference = runs.run_train(reference_dir, _bindings(data_dir, **AUGMENTED))
  assert reference.returncode == 0, reference.stderr
  assert ('Augmentation: labeled flip + translate 2; unlabeled flip + translate 3'
          in reference.stdout)
  # Killed right after its first checkpoint (step 2), then resumed to step 6.
  killed = runs.run_train(killed_dir, _bindings(data_dir, **AUGMENTED),
                          fault='checkpoint_written#1=kill')
  assert killed.returncode != 0
  assert os.path.basename(tf.train.latest_checkpoint(
      os.path.join(killed_dir, 'checkpoints'))) == 'ckpt-2'
  resumed = runs.run_train(killed_dir, _bindings(data_dir, **AUGMENTED))
  assert resumed.returncode == 0, resumed.stderr
  assert 'Resuming from' in resumed.stdout
  expected, actual = _weights(reference_dir), _weights(killed_dir)
  assert expected.keys() == actual.keys()
  assert int(actual['step/.ATTRIBUTES/VARIABLE_VALUE']) == 6
  for name in expected:
    np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
  # The augmentation was applied: the same run without it ends elsewhere.
  plain_dir = str(tmp_path / 'plain')
  plain = runs.run_train(plain_dir, _bindings(data_dir))
  assert plain.returncode == 0, plain.stderr
  assert 'Augmentation' not in plain.stdout
  critic = [k for k in expected if k.startswith('critic/') and 'kernel' in k]
  assert critic and any(not np.array_equal(_weights(plain_dir)[k], expected[k])
                        for k in critic)
  # A resume with another augmentation is refused, naming the setting.
  other = runs.run_train(killed_dir, _bindings(
      data_dir, **{**AUGMENTED, 'augmentation.labeled_translate': 1, 'train.steps': 8}))
  assert other.returncode == 1
  assert 'augmentation.labeled_translate: run 2, now 1' in other.stdout + other.stderr


def test_the_supervised_baseline_trains_on_augmented_labels(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  bindings = _bindings(data_dir, **{'train.mode': "'supervised'", 'train.steps': 2,
                                    'augmentation.labeled_flip': True,
                                    'augmentation.labeled_translate': 2})
  result = runs.run_train(str(tmp_path / 'run'), bindings,
                          gin_files=(str(runs.REPO_ROOT / 'gin' / 'bases' / 'supervised.gin'),))
  assert result.returncode == 0, result.stderr
  assert 'Training supervised' in result.stdout
  assert 'Augmentation: labeled flip + translate 2' in result.stdout
  with open(os.path.join(tmp_path, 'run', 'run_config.json')) as f:
    assert json.load(f)['augmentation']['labeled_translate'] == 2
  # It took effect: the same run again ends with the same weights (deterministic ops), the
  # run without augmentation with other ones.
  supervised_gin = (str(runs.REPO_ROOT / 'gin' / 'bases' / 'supervised.gin'),)
  again = runs.run_train(str(tmp_path / 'again'), bindings, gin_files=supervised_gin)
  plain = runs.run_train(str(tmp_path / 'plain'), _bindings(data_dir, **{
      'train.mode': "'supervised'", 'train.steps': 2}), gin_files=supervised_gin)
  assert again.returncode == 0 and plain.returncode == 0, again.stderr + plain.stderr
  augmented = _weights(str(tmp_path / 'run'))
  critic = [k for k in augmented if k.startswith('critic/') and 'kernel' in k]
  assert critic
  for name in critic:
    np.testing.assert_array_equal(_weights(str(tmp_path / 'again'))[name], augmented[name])
  assert any(not np.array_equal(_weights(str(tmp_path / 'plain'))[k], augmented[k])
             for k in critic)
