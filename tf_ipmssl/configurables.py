"""The programs' gin boundary: every gin name of the library is registered here.

A program that parses gin imports this module first (command_line.parse_gin does). It
registers the builders' settings (`build_ssl_data.*`, `build_critic.*`,
`build_generator.*`, `make_strategy.*`: gin_settings.py), `train.*` (run_config.py), each
registered algorithm's settings under its name (`ssl.lambda_ce`: algorithms.py, read like
a builder's) and each registered constraint under its class name
(`ssl.constraints = [@Fisher()]`), including the algorithms and constraints a module
registers later (a gin file's `import`). The data, networks,
objectives and the distribution strategy do not import gin: the builders and constraint
classes stay plain, and gin is read only into the run configuration
(run_config.RunConfig.from_gin).
"""
import inspect

import gin

from tf_ipmssl import gin_settings
from tf_ipmssl.objectives import constraint
from tf_ipmssl.training import algorithms
# train.*, and the library's algorithms and constraints (run_config.ALGORITHMS, CONSTRAINTS).
from tf_ipmssl.training import run_config

for _settings in run_config.BUILDERS:
  gin_settings.register(_settings)

# Algorithm names given to gin in this process (gin cannot forget one: an algorithm
# registered again under a name keeps the settings gin first registered under it).
_ALGORITHM_NAMES = set()


def _register_algorithm(cls):
  """`<name>.<setting>` in gin: the settings of algorithm `cls`, read by
  gin_settings.from_gin (run_config.RunConfig.from_gin)."""
  if cls.name not in _ALGORITHM_NAMES:
    gin_settings.register(cls.settings_spec())
    _ALGORITHM_NAMES.add(cls.name)


algorithms.when_registered(_register_algorithm)

# Constraint names given to gin in this process (gin cannot forget one: a class registered
# again under a name keeps the name's gin configurable, which builds whatever class the
# constraint registry holds under it when called).
_CONSTRAINT_NAMES = set()


def _register_constraint(cls):
  """`@<class name>()` in gin: an instance of the constraint class registered under that
  name when gin calls it (constraint.get: a ConfigError once it is no longer registered)."""
  name = cls.__name__
  if name in _CONSTRAINT_NAMES:
    return

  def make(**fields):
    return constraint.get(name)(**fields)

  make.__name__ = make.__qualname__ = name
  make.__doc__ = cls.__doc__
  make.__signature__ = inspect.signature(cls)
  gin.configurable(name, module=cls.__module__)(make)
  _CONSTRAINT_NAMES.add(name)


constraint.when_registered(_register_constraint)
