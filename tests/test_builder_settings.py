"""A builder's settings: completed with its defaults, checked, and held as a frozen dataclass
of the builder's own, typed as the builder annotates its parameters."""
import dataclasses
import inspect
import typing

import pytest

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.training import run_config


def _builder(size: int, width: float = 1.0, name='net'):
  return size, width, name


SETTINGS = builder_settings.Settings.of('build_thing', _builder, supplied=('size',))


def test_settings_are_the_builders_parameters_but_the_supplied_ones():
  assert [p.name for p in SETTINGS.parameters] == ['width', 'name']
  assert dict(SETTINGS.complete({'width': 0.5})) == {'width': 0.5, 'name': 'net'}
  with pytest.raises(errors.ConfigError, match=r"build_thing has no setting\(s\) \['depth'\]"):
    SETTINGS.complete({'depth': 3})


def test_made_settings_are_a_typed_frozen_dataclass():
  values = SETTINGS.make({'name': 'critic'})
  assert type(values).__name__ == 'BuildThingSettings'
  # Typed as the builder annotates (an unannotated parameter: any type).
  assert {f.name: f.type for f in dataclasses.fields(values)} == {'width': float,
                                                                  'name': typing.Any}
  assert (values.width, values.name) == (1.0, 'critic')
  with pytest.raises(dataclasses.FrozenInstanceError):
    values.width = 2.0
  # The builder's keyword arguments, as it takes them.
  assert _builder(3, **values.kwargs()) == (3, 1.0, 'critic')
  assert SETTINGS.make({'name': 'critic'}) == values and SETTINGS.make({}) != values


def test_a_run_configuration_holds_each_builders_typed_settings():
  config = run_config.RunConfig.create(steps=1, mode='supervised', critic={'width': 0.5})
  assert isinstance(config.critic, critic_lib.SETTINGS.values_type)
  assert config.critic.width == 0.5
  annotations = {name: p.annotation
                 for name, p in inspect.signature(critic_lib.build_critic).parameters.items()}
  assert {f.name: f.type for f in dataclasses.fields(config.critic)} == {
      name: annotations[name] for name in config.critic.kwargs()}
  assert config.critic.kwargs()['normalization'] == 'none'  # The builder's default.
  assert config.to_json()['bindings']['build_critic'] == {
      k: (list(v) if isinstance(v, tuple) else v)
      for k, v in sorted(config.critic.kwargs().items())}


@dataclasses.dataclass(frozen=True)
class _Owned:
  beta: float = 0.5
  steps: int = 3


def test_settings_of_a_dataclass_make_that_dataclass():
  owned = builder_settings.Settings.of_dataclass('toy', _Owned)
  assert [(p.name, p.default) for p in owned.parameters] == [('beta', 0.5), ('steps', 3)]
  assert owned.values_type is _Owned
  assert owned.make({'beta': 0.7}) == _Owned(beta=0.7, steps=3)
  assert builder_settings.values_of(owned.make({})) == {'beta': 0.5, 'steps': 3}
  with pytest.raises(errors.ConfigError, match=r"toy has no setting\(s\) \['gamma'\]"):
    owned.make({'gamma': 1.0})
