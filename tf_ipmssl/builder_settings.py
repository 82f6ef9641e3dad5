"""A group of settings under its gin name: a frozen dataclass and the name it is bound by.

`Group` is the spec (a gin name and a dataclass); the settings themselves, the values, are
instances of that dataclass (an algorithm's are its `Settings`).

Each builder declares its settings as a frozen dataclass beside it, one documented field per
setting (networks/critic.py's `BuildCritic`: `build_critic.width`, ...), and takes an
instance of it as its first argument, reading each setting by attribute (`settings.width`);
its caller supplies the rest (sizes, seeds). `Group.of_dataclass(name, cls)` names the
fields of `cls` as `name`, the gin name (`build_critic`); `complete(given)` fills in the
defaults and `make(given)` makes the `cls` instance, which the run configuration
(training/run_config.py) holds and passes to the builder. Train's settings and an algorithm's are
named the same way. This module does not import gin: the programs' gin boundary
(configurables.py) registers the names.
"""
import dataclasses
import inspect
import types
from typing import Mapping, Tuple

from tf_ipmssl import errors


@dataclasses.dataclass(frozen=True)
class Group:
  """The gin name and the settings' dataclass of one group: train, a builder or an
  algorithm (see the module doc)."""
  name: str
  # The frozen dataclass `make` makes.
  values_type: type

  @classmethod
  def of_dataclass(cls, name, values_type) -> 'Group':
    """The fields of frozen dataclass `values_type`, with their defaults, under `name`;
    `make` makes a `values_type`."""
    return cls(name, values_type)

  @property
  def parameters(self) -> Tuple[inspect.Parameter, ...]:
    """One keyword parameter per field, with its default (none for a field without one:
    then a required setting, which `complete` asks to bind)."""
    return tuple(inspect.Parameter(
        f.name, inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
                 for f in dataclasses.fields(self.values_type))

  def complete(self, given) -> Mapping:
    """`given` settings with the defaults for the rest, frozen; a ConfigError for an
    unknown name or a required setting that is not given."""
    names = [p.name for p in self.parameters]
    unknown = sorted(set(given) - set(names))
    if unknown:
      raise errors.ConfigError(f'{self.name} has no setting(s) {unknown}; its settings are '
                               f'{names}')
    values = {**{p.name: p.default for p in self.parameters}, **given}
    missing = [name for name, value in values.items() if value is inspect.Parameter.empty]
    if missing:
      raise errors.ConfigError(f'bind {", ".join(f"{self.name}.{m}" for m in missing)}')
    return types.MappingProxyType(values)

  def make(self, given):
    """The `values_type` instance of `given` settings completed (see `complete`)."""
    return self.values_type(**self.complete(given))


def values_of(values) -> dict:
  """A settings instance's values by name."""
  return {f.name: getattr(values, f.name) for f in dataclasses.fields(values)}
