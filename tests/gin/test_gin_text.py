"""configurables.gin_text: the gin of a configuration, which parses back to it (a run trained
from a configuration object records it as config.gin), and RunConfig.replaced."""
import math

import pytest

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import configurables
from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint
from tf_ipmssl.training import run_config


def _parsed(gin_files, gin_bindings=()):
  with configurables.isolated():
    configurables.parse(gin_files, list(gin_bindings))
    return configurables.run_config()


@pytest.mark.parametrize('cell', cells_lib.all_cells(), ids=lambda cell: cell.id)
def test_every_cell_parses_back_from_its_gin_text(cell):
  config = _parsed([str(cell.gin_path)])
  again = _parsed([], configurables.gin_text(config).splitlines())
  assert again == config and again.to_json() == config.to_json()


def test_constraints_are_scoped_references_with_their_fields():
  config = run_config.RunConfig.create(
      steps=3, settings={'constraints': (constraint.get('Fisher')(penalty_weight=0.5),
                                         constraint.get('Fisher')(component='f_neg'))})
  text = configurables.gin_text(config)
  assert 'ssl.constraints = (@constraint_0/Fisher(), @constraint_1/Fisher())' in text
  assert 'constraint_0/Fisher.penalty_weight = 0.5' in text
  assert "constraint_1/Fisher.component = 'f_neg'" in text
  assert _parsed([], text.splitlines()) == config


def test_infinite_values_are_written_as_overflowing_literals():
  assert configurables._gin_value(math.inf, []) == '1e999'  # pylint: disable=protected-access
  assert eval(configurables._gin_value(-math.inf, [])) == -math.inf  # pylint: disable=eval-used,protected-access
  with pytest.raises(errors.ConfigError, match='NaN'):
    configurables._gin_value(math.nan, [])  # pylint: disable=protected-access


def test_replaced_changes_settings_by_gin_name_and_validates_them():
  config = run_config.RunConfig.create(
      steps=3, settings={'constraints': (constraint.get('Fisher')(),)})
  changed = config.replaced({'train.steps': 7, 'build_critic.width': 0.5, 'ssl.lambda_ce': 2.0})
  assert (changed.train.steps, changed.build_critic.width,
          changed.algorithm_settings.lambda_ce) == (7, 0.5, 2.0)
  assert changed.differing_settings(config) == [
      ('train.steps', 7, 3), ('ssl.lambda_ce', 2.0, config.algorithm_settings.lambda_ce),
      ('build_critic.width', 0.5, 1.0)]
  supervised = config.replaced({'train.mode': 'supervised'})
  assert supervised.mode == 'supervised'
  for changes, message in (({'train.stepz': 1}, 'train.stepz is not a setting'),
                           ({'build_critic.width': 0}, 'build_critic.width'),
                           ({'ssl.lambda_cee': 1.0}, 'ssl.lambda_cee is not a setting'),
                           ({'nothing': 1}, 'nothing is not a setting')):
    with pytest.raises(errors.ConfigError, match=message):
      config.replaced(changes)
