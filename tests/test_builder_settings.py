"""A builder's settings: the frozen dataclass declared beside the builder, completed with
its defaults and checked under the builder's gin name."""
import dataclasses
import inspect

import pytest

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.data import augmentation
from tf_ipmssl.data import ssl_data
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.training import distribution
from tf_ipmssl.training import run_config


@dataclasses.dataclass(frozen=True)
class _Owned:
  beta: float = 0.5
  steps: int = 3


def test_settings_of_a_dataclass_make_that_dataclass():
  owned = builder_settings.Group.of_dataclass('toy', _Owned)
  assert [(p.name, p.default) for p in owned.parameters] == [('beta', 0.5), ('steps', 3)]
  assert owned.values_type is _Owned
  assert dict(owned.complete({'beta': 0.7})) == {'beta': 0.7, 'steps': 3}
  assert owned.make({'beta': 0.7}) == _Owned(beta=0.7, steps=3)
  assert builder_settings.values_of(owned.make({})) == {'beta': 0.5, 'steps': 3}
  with pytest.raises(errors.ConfigError, match=r"toy has no setting\(s\) \['gamma'\]"):
    owned.make({'gamma': 1.0})


@pytest.mark.parametrize('settings, declared', [
    (ssl_data.GROUP, ssl_data.BuildSslData), (critic_lib.GROUP, critic_lib.BuildCritic),
    (generator_lib.GROUP, generator_lib.BuildGenerator),
    (distribution.GROUP, distribution.MakeStrategy),
    (augmentation.GROUP, augmentation.Augmentations)])
def test_each_builder_declares_its_settings_as_a_frozen_dataclass(settings, declared):
  assert settings.values_type is declared
  assert declared.__dataclass_params__.frozen
  values = declared()
  with pytest.raises(dataclasses.FrozenInstanceError):
    setattr(values, dataclasses.fields(declared)[0].name, None)


def test_a_run_configuration_holds_each_builders_declared_settings():
  config = run_config.RunConfig.create(steps=1, mode='supervised', critic={'width': 0.5})
  assert config.build_critic == critic_lib.BuildCritic(width=0.5)
  assert config.build_critic.normalization == 'none'  # The declared default.
  assert config.to_json()['build_critic'] == {
      k: (list(v) if isinstance(v, tuple) else v)
      for k, v in sorted(builder_settings.values_of(config.build_critic).items())}


@dataclasses.dataclass(frozen=True)
class _Required:
  width: float
  depth: int = 2


def test_a_field_without_a_default_is_a_setting_to_bind():
  required = builder_settings.Group.of_dataclass('toy', _Required)
  assert [(p.name, p.default) for p in required.parameters] == [
      ('width', inspect.Parameter.empty), ('depth', 2)]
  with pytest.raises(errors.ConfigError, match=r'^bind toy\.width$'):
    required.make({})
  assert required.make({'width': 0.5}) == _Required(width=0.5, depth=2)
