"""run_config.json's older formats upgrade to today's by known answers, written out by hand."""
import copy

import pytest

from tf_ipmssl.run_dir import config_formats

FISHER = {'type': 'Fisher', 'name': 'fisher_f', 'component': 'f', 'penalty_weight': 1e-7}
FISHER_SCALED = {**FISHER, 'penalty_weight': 1e-6}

# A format-1 record (no version): the train settings in groups with what the run derived.
VERSION_1 = {
    'objective': {'algorithm': 'ssl', 'formulation': 'kplus1', 'constraints': [FISHER_SCALED],
                  'bound_constraints': [FISHER], 'lambda_ce': 1.5,
                  'constraint_penalty_scale': 10.0, 'weight_decay_v': 1e-3},
    'optimizers': {'critic_learning_rate': 2e-4, 'learning_rate_scale': 5.0,
                   'critic_rate': 1e-3, 'generator_rate': 1e-3},
    'loop': {'batch_size': 16, 'steps': 4, 'critic_iterations': 2},
    'numerics': {'seed': 3},
    'bindings': {'build_critic': {'width': 0.0625, 'image_size': 32},
                 'build_ssl_data': {'num_labeled': 20}},
}
# The same run in format 4: one object per gin name, nothing derived, no critic image size.
VERSION_4 = {
    'format_version': 4,
    'train': {'mode': 'ssl', 'weight_decay_v': 1e-3, 'critic_learning_rate': 2e-4,
              'learning_rate_scale': 5.0, 'batch_size': 16, 'steps': 4, 'seed': 3},
    'ssl': {'formulation': 'kplus1', 'constraints': [FISHER], 'lambda_ce': 1.5,
            'constraint_penalty_scale': 10.0, 'critic_iterations': 2},
    'build_critic': {'width': 0.0625},
    'build_ssl_data': {'num_labeled': 20},
}


def test_format_1_upgrades_to_one_object_per_gin_name():
  given = copy.deepcopy(VERSION_1)
  assert config_formats.upgrade(given) == VERSION_4
  assert given == VERSION_1  # The record read is not changed.


def test_formats_2_and_3_upgrade_to_the_same():
  version_2 = {'format_version': 2,
               'train': {**VERSION_4['train'], **VERSION_4['ssl']},
               'bindings': {'build_critic': {'width': 0.0625, 'image_size': 32},
                            'build_ssl_data': {'num_labeled': 20}},
               'objective': {'algorithm': 'ssl'}}
  version_3 = {'format_version': 3, 'train': VERSION_4['train'],
               'bindings': {'ssl': VERSION_4['ssl'], 'build_critic': {'width': 0.0625},
                            'build_ssl_data': {'num_labeled': 20}},
               'optimizers': {'critic_rate': 1e-3}}
  assert config_formats.upgrade(version_2) == VERSION_4
  assert config_formats.upgrade(version_3) == VERSION_4


def test_a_format_1_record_without_bound_constraints_holds_them_as_bound():
  """Written before the penalty scale existed: nothing scaled its constraints."""
  older = copy.deepcopy(VERSION_1)
  del older['objective']['bound_constraints'], older['objective']['constraint_penalty_scale']
  older['objective']['constraints'] = [FISHER]
  upgraded = config_formats.upgrade(older)
  assert upgraded['ssl']['constraints'] == [FISHER]
  assert 'constraint_penalty_scale' not in upgraded['ssl']


def test_another_algorithms_unused_semi_supervised_bindings_are_dropped():
  supervised = {'format_version': 2, 'train': {'mode': 'supervised', 'steps': 4,
                                               'lambda_ce': 1.0, 'constraints': []},
                'bindings': {}}
  assert config_formats.upgrade(supervised) == {
      'format_version': 4, 'train': {'mode': 'supervised', 'steps': 4}}


def test_todays_format_is_read_as_written_and_a_newer_one_refused():
  upgraded = config_formats.upgrade(VERSION_4)
  assert upgraded == VERSION_4 and upgraded is not VERSION_4
  assert config_formats.version_of(VERSION_1) == 1
  with pytest.raises(config_formats.FormatError, match='format version 5: this tf_ipmssl '
                     'reads versions 1 to 4; use the tf_ipmssl that wrote it'):
    config_formats.upgrade({**VERSION_4, 'format_version': 5})
