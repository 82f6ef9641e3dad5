"""A builder's settings under a gin name, read once at a program's boundary.

`register(name, builder, supplied)` makes the settings of `builder` — every parameter but
the `supplied` ones, which its caller always passes (sizes, seeds) — gin-configurable
under `name`, without making `builder` itself configurable: the builder stays a plain
function, so whatever gin holds when it runs changes nothing. The returned `Settings`
reads them (`from_gin()`: the bound values, the builder's defaults for the rest; gin
records them in its operative config) or completes given ones without gin
(`complete(given)`). The run configuration (training/run_config.py) holds the result and
passes it to the builder as keyword arguments.
"""
import dataclasses
import inspect
import types
from typing import Callable, Mapping, Tuple

import gin

from tf_ipmssl import errors


@dataclasses.dataclass(frozen=True)
class Settings:
  """The gin name and settings of one builder (see the module doc)."""
  name: str
  parameters: Tuple[inspect.Parameter, ...]
  read: Callable[[], dict]  # The gin configurable: the bound settings, defaults included.

  def from_gin(self) -> Mapping:
    """The settings as this process's gin configuration binds them, frozen."""
    return self.complete(self.read())

  def complete(self, given) -> Mapping:
    """`given` settings with the builder's defaults for the rest, frozen; a ConfigError for
    an unknown name or a required setting that is not given."""
    names = [p.name for p in self.parameters]
    unknown = sorted(set(given) - set(names))
    if unknown:
      raise errors.ConfigError(f'{self.name} has no setting(s) {unknown}; its settings are '
                               f'{names}')
    values = {**{p.name: p.default for p in self.parameters}, **given}
    missing = [name for name, value in values.items()
               if value is gin.REQUIRED or value is inspect.Parameter.empty]
    if missing:
      raise errors.ConfigError(f'bind {", ".join(f"{self.name}.{m}" for m in missing)}')
    return types.MappingProxyType(values)


def register(name, builder, supplied=()) -> Settings:
  """Registers the settings of `builder` (all parameters but `supplied`) with gin as `name`."""
  signature = inspect.signature(builder)
  parameters = tuple(p for p in signature.parameters.values() if p.name not in supplied)

  def read(**bound):
    return bound

  read.__name__ = read.__qualname__ = name
  read.__module__ = builder.__module__
  read.__signature__ = signature.replace(parameters=parameters)
  return Settings(name, parameters, gin.configurable(name)(read))
