"""Constraint sets that cannot work are ConfigErrors whose message names the fix."""
import pytest

from tests.objectives import gradient_checks
from tests.objectives import tiny_critics
from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev
from tf_ipmssl.objectives import weight_clipping


def test_config_error_is_a_user_error():
  assert issubclass(errors.ConfigError, errors.UserError)


@pytest.mark.parametrize('bad', [fisher.Fisher('f_neg'), sobolev.Sobolev('f+'),
                                 gradient_penalty.GradientPenalty('f-')])
def test_component_the_plain_formulation_lacks(bad):
  with pytest.raises(errors.ConfigError, match=r"'plain' formulation does not have") as info:
    constraint.validate_constraints('plain', [bad])
  assert 'K+1' in str(info.value) and bad.component in str(info.value)


@pytest.mark.parametrize('empty', [[], None, ()])
def test_no_constraint(empty):
  with pytest.raises(errors.ConfigError, match='no constraint.*unbounded.*@Fisher'):
    constraint.validate_constraints('kplus1', empty)


@pytest.mark.parametrize('pair', [
    (fisher.Fisher('f'), fisher.Fisher('f')),
    (sobolev.Sobolev('f+'), sobolev.Sobolev('f_pos')),  # Aliases are the same component.
])
def test_duplicate_constraint(pair):
  with pytest.raises(errors.ConfigError, match=f'{pair[0].name} is given twice'):
    constraint.validate_constraints('kplus1', pair)


def test_same_kind_on_different_components_is_fine():
  constraints = [fisher.Fisher('f'), fisher.Fisher('f-'), weight_clipping.WeightClipping()]
  assert constraint.validate_constraints('kplus1', constraints) == tuple(constraints)


def test_unknown_component():
  with pytest.raises(errors.ConfigError, match=r"unknown critic component 'fneg'.*f_neg"):
    fisher.Fisher('fneg')


def test_unknown_formulation():
  with pytest.raises(errors.ConfigError, match=r"unknown critic formulation 'k\+1'.*kplus1"):
    constraint.validate_constraints('k+1', [fisher.Fisher()])
  with pytest.raises(errors.ConfigError, match='unknown critic formulation'):
    gradient_checks.run_critic_objective(
        tiny_critics.MlpCritic(), tiny_critics.random_batches(), formulation='Kp1',
        constraints=[fisher.Fisher()], multipliers={'fisher_f': 0.0})


def test_not_a_constraint():
  with pytest.raises(errors.ConfigError, match='is not a constraint'):
    constraint.validate_constraints('kplus1', ['fisher'])


def test_gradient_penalties_with_different_alpha_draws():
  constraints = [gradient_penalty.GradientPenalty('f'),
                 gradient_penalty.GradientPenalty('f-', per_example_alpha=False)]
  with pytest.raises(errors.ConfigError, match='per_example_alpha'):
    gradient_checks.run_critic_objective(
        tiny_critics.MlpCritic(), tiny_critics.random_batches(), formulation='kplus1',
        constraints=constraints)
