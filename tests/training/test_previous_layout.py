"""Run dirs of earlier layouts still restore, evaluate, export and resume.

The fixtures are tiny real runs (4 steps, checkpoints of a narrow critic), one per earlier
format of run_config.json:

- previous_layout_supervised/: a supervised run of format version 1 (no version named:
  rebuilt from its groups), written before a supervised run stopped building a generator
  (its checkpoint holds a generator and its optimizer) and before run_config.json recorded
  the distribution settings;
- version1_layout_ssl/: an SSL run (Fisher on f, Sobolev on f-, ρ scaled by 10) of the
  layout written until run_config.json carried a format version;
- version2_layout_ssl/: the same SSL run of format version 2, written by the last
  tf_ipmssl that wrote it;
- version3_layout_ssl/: the same SSL run (with labeled-stream augmentation) of format
  version 3, written by the last tf_ipmssl that wrote it.

Formats 1 and 2 held the semi-supervised settings among the train bindings
(train.formulation, ...): they are rebuilt as the algorithm's settings (ssl.*), and their
config.gin, which binds the old names, resumes once those bindings carry the names the error
gives.

version2_run_configs.json holds the run_config.json of an SSL and a supervised configuration
as format version 2 wrote them (every train binding under 'train'), and
version3_run_configs.json as format version 3 wrote them (the train bindings under 'train';
the algorithm's and the builders' settings under 'bindings', by gin name). Today's format
(4) and the readers of the older ones are in tf_ipmssl/run_dir/config_formats.py.

A new supervised run's checkpoint holds no generator.
"""
import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs
from tf_ipmssl import errors
from tf_ipmssl.run_dir import config_formats
from tf_ipmssl.training import distribution
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config

PREVIOUS = runs.REPO_ROOT / 'tests' / 'training' / 'previous_layout_supervised'
VERSION_1 = runs.REPO_ROOT / 'tests' / 'training' / 'version1_layout_ssl'
VERSION_2 = runs.REPO_ROOT / 'tests' / 'training' / 'version2_run_configs.json'
VERSION_3 = runs.REPO_ROOT / 'tests' / 'training' / 'version3_run_configs.json'
VERSION_2_RUN = runs.REPO_ROOT / 'tests' / 'training' / 'version2_layout_ssl'
VERSION_3_RUN = runs.REPO_ROOT / 'tests' / 'training' / 'version3_layout_ssl'
FIXTURES = (PREVIOUS, VERSION_1, VERSION_2_RUN, VERSION_3_RUN)
# The data's settings added after the version 2 and 3 records were written, at their defaults
# (label splits as users have them): a record without them reads as a run that used none.
# The train settings added after these records were written, at their defaults.
TRAIN_SETTINGS_SINCE = {'validation_subset_per_class': None, 'test_every_evaluation': False}
LABEL_SPLIT_SETTINGS = {'imbalance_ratio': None, 'labeled_per_class': None,
                        'imbalanced_unlabeled': True, 'validation_per_class': None,
                        'classes': None, 'unlabeled_size': None, 'foreign_share': 0.0}
# What format 1's groups held besides the train bindings: derived values and train.mode.
DERIVED = ('algorithm', 'constraints', 'bound_constraints', 'critic_rate', 'generator_rate')


def copy_run(fixture, tmp_path):
  """The recorded run, its data_dir pointed at this test's (identical) fake data."""
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = tmp_path / fixture.name
  shutil.copytree(fixture, model_dir)
  record_path = model_dir / 'run_config.json'
  record = json.loads(record_path.read_text())
  record['bindings']['build_ssl_data']['data_dir'] = data_dir
  record_path.write_text(json.dumps(record, indent=2))
  config = model_dir / 'config.gin'
  lines = [f'build_ssl_data.data_dir = {data_dir!r}' if line.startswith(
      'build_ssl_data.data_dir') else line for line in config.read_text().splitlines()]
  config.write_text('\n'.join(lines) + '\n')
  return str(model_dir)


def _still_settings(builder, settings):
  """A record's settings of `builder` without those that are no longer its settings."""
  return {k: v for k, v in settings.items()
          if k not in config_formats.NO_LONGER_SETTINGS.get(builder, ())}


def test_version_1_records_are_rebuilt_from_their_groups():
  supervised = json.loads((PREVIOUS / 'run_config.json').read_text())
  ssl = json.loads((VERSION_1 / 'run_config.json').read_text())
  assert 'format_version' not in supervised and 'format_version' not in ssl
  config = run_config.RunConfig.from_json(ssl)
  assert config.mode == 'ssl' and config.train.steps == 4 and config.train.batch_size == 16
  settings = config.algorithm_settings
  assert settings.constraint_penalty_scale == 10.0
  # The constraints as bound (unscaled), scaled again: the record's as used.
  assert [(c.name, c.penalty_weight) for c in settings.constraints] == [
      ('fisher_f', 1e-7), ('sobolev_f_neg', 1e-8)]
  assert [(c.name, c.penalty_weight) for c in config.constraints] == [
      ('fisher_f', 1e-6), ('sobolev_f_neg', 1e-7)]
  assert config.build_critic.width == 0.0625 and config.build_generator.noise_dim == 2
  # Written again, today's record holds the same values: the semi-supervised ones as the
  # algorithm's settings, the others of the groups as train's, and the builders' settings.
  again = config.to_json()
  assert again['format_version'] == 4
  moved = config_formats.SSL_SETTINGS_IN_TRAIN
  assert again['ssl'] == {
      **{k: v for k, v in ssl['objective'].items() if k in moved and k != 'constraints'},
      'critic_iterations': ssl['loop']['critic_iterations'],
      'constraints': ssl['objective']['bound_constraints']}
  assert set(again['ssl']) == set(moved)
  assert again['train']['mode'] == ssl['objective']['algorithm']
  for group in ('objective', 'optimizers', 'loop', 'numerics'):
    for k, v in ssl[group].items():
      if k not in moved + DERIVED:
        assert again['train'][k] == v, k
  # What the run derived, derived again as the record had it.
  assert config.critic_rate == ssl['optimizers']['critic_rate']
  assert config.generator_rate == ssl['optimizers']['generator_rate']
  assert [run_config._jsonable(c) for c in config.constraints] == ssl['objective']['constraints']
  # The builders' settings recorded then, the same (but for those that are no longer
  # settings: the critic's image size, now the data's); those added since, at their defaults.
  for builder, settings in ssl['bindings'].items():
    kept = _still_settings(builder, settings)
    assert {k: again[builder][k] for k in kept} == kept
  assert ssl['bindings']['build_critic']['image_size'] == config.image_size == 32
  added = {k: v for k, v in again['build_ssl_data'].items()
           if k not in ssl['bindings']['build_ssl_data']}
  defaults = run_config.RunConfig.create(steps=1, mode='supervised').to_json()
  assert added == {k: v for k, v in defaults['build_ssl_data'].items() if k in added}
  previous = run_config.RunConfig.from_json(supervised)
  assert previous.mode == 'supervised' and previous.constraints == ()
  # Its semi-supervised bindings, unused then, are none of the supervised algorithm's.
  assert previous.to_json()['supervised'] == {}
  # The previous layout recorded the bound settings only: the rest are the builders'
  # defaults (as they were when gin read the run's config.gin).
  assert previous.make_strategy == distribution.MakeStrategy(kind='auto', devices=None)
  assert previous.build_critic.dropout == 0.5
  for name, recorded in supervised['bindings'].items():
    assert recorded.items() <= previous.to_json()[name].items()


def test_version_2_records_map_their_train_bindings_onto_the_algorithms_settings():
  records = json.loads(VERSION_2.read_text())
  ssl, supervised = records['ssl'], records['supervised']
  assert ssl['format_version'] == supervised['format_version'] == 2
  config = run_config.RunConfig.from_json(ssl)
  moved = config_formats.SSL_SETTINGS_IN_TRAIN
  # Every semi-supervised train binding is the ssl setting of its name, as it was bound.
  again = config.to_json()
  assert again['ssl'] == {k: ssl['train'][k] for k in moved}
  assert config.algorithm_settings.critic_iterations == 3
  assert config.algorithm_settings.generator_loss == 'feature_matching'
  assert [(c.name, c.penalty_weight) for c in config.constraints] == [
      ('fisher_f', 1e-6), ('sobolev_f_neg', 1e-7)]  # ρ x10, as the record used them.
  # Train settings added since: at their defaults.
  assert again['train'] == {**{k: v for k, v in ssl['train'].items() if k not in moved},
                            **TRAIN_SETTINGS_SINCE}
  assert [run_config._jsonable(c) for c in config.constraints] == ssl['objective']['constraints']
  assert config.critic_rate == ssl['optimizers']['critic_rate']
  # The builders' settings, but the critic's image size: now the data's, resolved; and the
  # data's settings added since, at their defaults (STL-10's fold: None).
  for builder, settings in ssl['bindings'].items():
    added = ({'image_size': 32, 'stl10_fold': None, **LABEL_SPLIT_SETTINGS}
             if builder == 'build_ssl_data' else {})
    assert again[builder] == {**_still_settings(builder, settings), **added}
  # The supervised run had them unused: none is a supervised setting.
  previous = run_config.RunConfig.from_json(supervised)
  assert previous.mode == 'supervised' and previous.to_json()['supervised'] == {}
  assert previous.to_json()['train'] == {
      **{k: v for k, v in supervised['train'].items() if k not in moved},
      **TRAIN_SETTINGS_SINCE}


def test_version_3_records_rebuild_to_the_configuration_they_were_written_from():
  records = json.loads(VERSION_3.read_text())
  ssl, supervised = records['ssl'], records['supervised']
  assert ssl['format_version'] == supervised['format_version'] == 3
  config = run_config.RunConfig.from_json(ssl)
  assert config.mode == 'ssl' and config.train.steps == 4 and config.train.batch_size == 16
  assert config.train.seed == 3 and config.critic_rate == 4e-4
  assert config.build_critic.width == 0.0625 and config.build_generator.noise_dim == 2
  assert config.build_ssl_data.num_labeled == 100 and config.image_size == 32
  assert config.augmentations['labeled'].translate == 2
  settings = config.algorithm_settings
  assert settings.lambda_ce == 0.5 and settings.critic_iterations == 3
  assert settings.generator_loss == 'feature_matching'
  assert [(c.name, c.penalty_weight) for c in settings.constraints] == [
      ('fisher_f', 1e-7), ('sobolev_f_neg', 1e-8)]
  assert [(c.name, c.penalty_weight) for c in config.constraints] == [
      ('fisher_f', 1e-6), ('sobolev_f_neg', 1e-7)]  # ρ x10, as the record used them.
  previous = run_config.RunConfig.from_json(supervised)
  assert previous.mode == 'supervised' and previous.constraints == ()
  assert previous.build_ssl_data.num_labeled is None and previous.build_critic.width == 0.0625
  for record, rebuilt in ((ssl, config), (supervised, previous)):
    assert run_config.RunConfig.from_json(rebuilt.to_json()) == rebuilt
    assert rebuilt.differing_settings(run_config.RunConfig.from_json(record)) == []
    written = config_formats.upgrade(record)
    written['build_ssl_data'] = {**written['build_ssl_data'], **LABEL_SPLIT_SETTINGS}
    written['train'] = {**written['train'], **TRAIN_SETTINGS_SINCE}
    assert rebuilt.to_json() == written


@pytest.mark.parametrize('fixture', FIXTURES, ids=lambda f: f.name)
def test_earlier_run_restores_evaluates_exports_and_resumes(tmp_path, fixture):
  model_dir = copy_run(fixture, tmp_path)
  saved = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', 'ckpt-4'))
  assert any(k.startswith('generator/') for k in saved)  # Every layout kept a generator.

  run = runs.restore_run(model_dir)
  assert (run.generator is None) == (fixture is PREVIOUS)
  critic, _ = run.restore_critic('latest', 'trained')
  np.testing.assert_array_equal(critic.s_head.kernel.numpy(),
                                saved['critic/s_head/_kernel/.ATTRIBUTES/VARIABLE_VALUE'])

  result = runs.run_program('evaluate', f'--model_dir={model_dir}', '--checkpoint=best',
                            '--split=validation', timeout=600, cwd=str(runs.REPO_ROOT))
  assert result.returncode == 0, result.stderr[-3000:]
  out = json.loads(result.stdout)
  metrics = json.load(open(os.path.join(model_dir, 'metrics.json')))
  assert out['error'] == metrics['best']['validation_error']
  export_dir = os.path.join(model_dir, 'export_latest')
  result = runs.run_program('export', f'--model_dir={model_dir}', '--checkpoint=latest',
                            timeout=600, cwd=str(runs.REPO_ROOT))
  assert result.returncode == 0, result.stderr[-3000:]
  assert tf.saved_model.contains_saved_model(export_dir)

  config_gin = os.path.join(model_dir, 'config.gin')
  if fixture is VERSION_3_RUN:  # Its config.gin binds today's names: it resumes as it is.
    _resumes(model_dir, config_gin)
    return
  # Its own configuration (config.gin) binds train.formulation, ...: refused in one line
  # naming the new name, the run dir untouched.
  result = runs.run_train(model_dir, ['train.steps = 6'], gin_files=(config_gin,))
  assert result.returncode == 1 and 'Traceback' not in result.stderr, result.stderr[-3000:]
  assert re.search(r'error: train\.(\w+) is now a setting of the algorithm: bind ssl\.\1 '
                   r'instead', result.stderr), result.stderr[-3000:]
  assert not os.path.exists(os.path.join(model_dir, 'checkpoints', 'ckpt-6.index'))
  # With those bindings renamed as the error says, it resumes for two more steps.
  with open(config_gin) as f:
    text = f.read()
  with open(config_gin, 'w') as f:
    f.write(re.sub(rf'^train\.({"|".join(config_formats.SSL_SETTINGS_IN_TRAIN)}) ',
                   r'ssl.\1 ', text, flags=re.M))
  _resumes(model_dir, config_gin)


def _resumes(model_dir, config_gin):
  """The run resumes for two more steps, and records its configuration in today's format."""
  result = runs.run_train(model_dir, ['train.steps = 6'], gin_files=(config_gin,))
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'Resuming from' in result.stdout and 'step 6/6' in result.stdout
  resumed = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', 'ckpt-6'))
  assert int(resumed['step/.ATTRIBUTES/VARIABLE_VALUE']) == 6
  record = json.load(open(os.path.join(model_dir, 'run_config.json')))
  assert record['format_version'] == 4 and record['train']['steps'] == 6


def test_a_run_dir_without_run_config_json_is_refused_in_one_line(tmp_path):
  older = tmp_path / 'older'
  shutil.copytree(PREVIOUS, older)
  (older / 'run_config.json').unlink()
  with pytest.raises(errors.UserError, match='has no run_config.json: it was written by a '
                     'tf_ipmssl older than the run configuration'):
    run_lib.run_config_of(str(older))
  with pytest.raises(errors.UserError, match='is not a tf_ipmssl run directory'):
    run_lib.run_config_of(str(tmp_path))
