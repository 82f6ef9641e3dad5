"""A builder's settings (builder_settings.Settings) under its gin name, read once at a
program's boundary.

`register(settings)` makes the settings gin-configurable under `settings.name` without
making the builder itself configurable: the builder stays a plain function, so whatever
gin holds when it runs changes nothing. `from_gin(settings)` reads them: the bound values,
the builder's defaults for the rest (gin records them in its operative config). The
programs register every builder's settings by importing tf_ipmssl.configurables.
"""
import inspect
from typing import Mapping

import gin

from tf_ipmssl import builder_settings
from tf_ipmssl import errors


def register(settings: builder_settings.Settings) -> None:
  """Registers `settings` with gin as `settings.name` (once per process)."""
  def read(**bound):
    return bound

  read.__name__ = read.__qualname__ = settings.name
  read.__signature__ = inspect.Signature(settings.parameters)
  gin.configurable(settings.name)(read)


def from_gin(settings: builder_settings.Settings) -> Mapping:
  """The settings as this process's gin configuration binds them, frozen."""
  try:
    read = gin.get_configurable(settings.name)
  except ValueError:
    raise errors.ConfigError(f'{settings.name} is not registered with gin: import '
                             'tf_ipmssl.configurables before parsing gin') from None
  bound = read()
  if any(value is gin.REQUIRED for value in bound.values()):
    missing = [name for name, value in bound.items() if value is gin.REQUIRED]
    raise errors.ConfigError(f'bind {", ".join(f"{settings.name}.{m}" for m in missing)}')
  return settings.complete(bound)
