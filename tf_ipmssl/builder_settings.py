"""A builder's settings: every parameter of a plain function but those its caller supplies.

`Settings.of(name, builder, supplied)` names the settings of `builder` — every parameter
but the `supplied` ones, which its caller always passes (sizes, seeds) — as `name`, the gin
name a program binds them under (`build_critic.width`). `complete(given)` fills in the
builder's defaults. The run configuration (training/run_config.py) holds the result and
passes it to the builder as keyword arguments. This module does not import gin: the
programs' gin boundary (gin_settings.py, configurables.py) registers the names.
"""
import dataclasses
import inspect
import types
from typing import Mapping, Tuple

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
