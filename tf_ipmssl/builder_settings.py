"""A builder's settings: every parameter of a plain function but those its caller supplies.

`Settings.of(name, builder, supplied)` names the settings of `builder` — every parameter
but the `supplied` ones, which its caller always passes (sizes, seeds) — as `name`, the gin
name a program binds them under (`build_critic.width`); `Settings.of_dataclass(name, cls)`
names the fields of a frozen dataclass the same way (an algorithm's settings, whose type is
then that class). `complete(given)` fills in the
builder's defaults; `make(given)` makes of them a frozen dataclass of the builder's own type
(`values_type`, e.g. BuildCriticSettings: one typed field per setting, `config.critic.width`),
which the run configuration (training/run_config.py) holds and passes to the builder as
keyword arguments (`kwargs()`). This module does not import gin: the
programs' gin boundary (gin_settings.py, configurables.py) registers the names.
"""
import dataclasses
import functools
import inspect
import types
from typing import Any, Mapping, Optional, Tuple

from tf_ipmssl import errors


@dataclasses.dataclass(frozen=True)
class Settings:
  """The name and settings of one builder (see the module doc)."""
  name: str
  parameters: Tuple[inspect.Parameter, ...]
  # The type `make` makes (None: `values_type` is made from the parameters).
  given_type: Optional[type] = None

  @classmethod
  def of(cls, name, builder, supplied=()) -> 'Settings':
    """The settings of `builder` (all its parameters but `supplied`) under `name`."""
    return cls(name, tuple(p for p in inspect.signature(builder).parameters.values()
                           if p.name not in supplied))

  @classmethod
  def of_dataclass(cls, name, values_type) -> 'Settings':
    """The fields of frozen dataclass `values_type`, with their defaults, under `name`;
    `make` makes a `values_type`."""
    return cls(name, tuple(
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
        for f in dataclasses.fields(values_type)), values_type)

  def complete(self, given) -> Mapping:
    """`given` settings with the builder's defaults for the rest, frozen; a ConfigError for
    an unknown name or a required setting that is not given."""
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

  @functools.cached_property
  def values_type(self) -> type:
    """The frozen dataclass of these settings: `given_type`, else one made with a field per
    setting, typed as the builder annotates it, and `kwargs()`, the settings as the
    builder's keyword arguments."""
    if self.given_type is not None:
      return self.given_type
    words = self.name.split('_')
    return dataclasses.make_dataclass(
        ''.join(w.capitalize() for w in words) + 'Settings',
        [(p.name, Any if p.annotation is inspect.Parameter.empty else p.annotation)
         for p in self.parameters],
        frozen=True, namespace={'__module__': __name__, 'kwargs': values_of})

  def make(self, given) -> Any:
    """The `values_type` instance of `given` settings completed (see `complete`)."""
    return self.values_type(**self.complete(given))


def values_of(values) -> dict:
  """A settings instance's values by name (a builder's: its keyword arguments)."""
  return {f.name: getattr(values, f.name) for f in dataclasses.fields(values)}
