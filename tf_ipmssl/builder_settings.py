"""A builder's settings: every parameter of a plain function but those its caller supplies.

`Settings.of(name, builder, supplied)` names the settings of `builder` — every parameter
but the `supplied` ones, which its caller always passes (sizes, seeds) — as `name`, the gin
name a program binds them under (`build_critic.width`). `complete(given)` fills in the
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
from typing import Any, Mapping, Tuple

from tf_ipmssl import errors


@dataclasses.dataclass(frozen=True)
class Settings:
  """The name and settings of one builder (see the module doc)."""
  name: str
  parameters: Tuple[inspect.Parameter, ...]

  @classmethod
  def of(cls, name, builder, supplied=()) -> 'Settings':
    """The settings of `builder` (all its parameters but `supplied`) under `name`."""
    return cls(name, tuple(p for p in inspect.signature(builder).parameters.values()
                           if p.name not in supplied))

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
    """The frozen dataclass of these settings: a field per setting, typed as the builder
    annotates it, and `kwargs()`, the settings as the builder's keyword arguments."""
    words = self.name.split('_')
    return dataclasses.make_dataclass(
        ''.join(w.capitalize() for w in words) + 'Settings',
        [(p.name, Any if p.annotation is inspect.Parameter.empty else p.annotation)
         for p in self.parameters],
        frozen=True, namespace={'__module__': __name__, 'kwargs': _kwargs})

  def make(self, given) -> Any:
    """The `values_type` instance of `given` settings completed (see `complete`)."""
    return self.values_type(**self.complete(given))


def _kwargs(values) -> dict:
  """A settings instance's values by name: the builder's keyword arguments."""
  return {f.name: getattr(values, f.name) for f in dataclasses.fields(values)}
