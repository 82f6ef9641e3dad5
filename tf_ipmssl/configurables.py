"""The one module that speaks to gin: every gin name of the library, parsing, reading.

Every group of settings is a frozen dataclass that validates itself when made, declared in
the module that reads it; this module gives each one to gin under its name, from the
dataclass's fields (their defaults gin's):

- `train.*`: run_config.Train (with the algorithms' settings that were once train's, so that
  such a binding is refused naming its new place);
- `build_ssl_data.*`, `build_critic.*`, `build_generator.*`, `make_strategy.*`,
  `augmentation.*`: the builders' settings (run_config.BUILDERS);
- `<algorithm>.*` (`ssl.lambda_ce`): each registered algorithm's Settings, under its name;
- `@<Constraint>()` (`ssl.constraints = [@Fisher()]`, `Fisher.penalty_weight`): each
  registered constraint class, which gin calls to make one.

The algorithms and constraints a module registers later (a gin file's `import`) get their
names as they are registered (the registries' `follow`). Nothing else in the library imports
gin: the builders and constraint classes stay plain, and a binding reaches them only through
`run_config()`, the RunConfig of what gin holds, validated (outside gin's calls, so that its
errors reach the caller as raised). `parse(...)` reads gin files and bindings into gin (a
ConfigError for a bad one); `isolated()` holds a configuration for one block.
"""
import contextlib
import dataclasses
import inspect
import logging as std_logging
import math
import os
import pathlib
from typing import List, Mapping, Sequence

from absl import logging
import gin

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import run_config as run_config_lib

# The checkout's gin configs (the cells, bases and presets), where `include`s are found.
GIN_DIR = pathlib.Path(__file__).resolve().parents[1] / 'gin'


def register(group: builder_settings.Group, other_names: bool = False) -> None:
  """Gives gin `group` (a gin name and its dataclass) as a configurable that returns
  what is bound, by name; with `other_names` it takes names besides its fields too, which
  the RunConfig refuses with a better message than gin's (train: a setting that moved to the
  algorithm, a misspelt one)."""
  def read(**values):
    return values

  read.__name__ = read.__qualname__ = group.name
  read.__signature__ = inspect.Signature(
      list(group.parameters) +
      ([inspect.Parameter('others', inspect.Parameter.VAR_KEYWORD)] if other_names else []))
  _register_unqualified(group.name, read)


def _register_unqualified(name, fn):
  """Gives gin `fn` under the complete selector `name` itself, no module before it: a
  selector that equals a complete one is that one (gin's exact match), so `train.steps`
  stays the library's beside a user's own `@gin.configurable('train')` (whose complete
  selector carries its module: `my_module.train.x` binds it); under the module's name gin
  would find both and refuse the binding as ambiguous."""
  fn.__module__ = None
  gin.configurable(name)(fn)


def bound(group: builder_settings.Group) -> Mapping:
  """The group `group` as this process's gin configuration binds it: every field, its
  default where it is not bound (and any other name bound, for a group registered with
  other_names); a ConfigError for a required one that is not bound."""
  try:
    read = gin.get_configurable(group.name)
  except ValueError:
    raise errors.ConfigError(f'{group.name} is not registered with gin: import '
                             'tf_ipmssl.configurables before parsing gin') from None
  values = read()
  if any(value is gin.REQUIRED for value in values.values()):
    missing = [name for name, value in values.items() if value is gin.REQUIRED]
    raise errors.ConfigError(f'bind {", ".join(f"{group.name}.{m}" for m in missing)}')
  fields = {p.name for p in group.parameters}
  others = {k: v for k, v in values.items() if k not in fields}
  return {**group.complete({k: v for k, v in values.items() if k in fields}), **others}


def run_config() -> run_config_lib.RunConfig:
  """The configuration of the gin bindings parsed in this process, validated: the
  programs' boundary (bin/train, before it touches the model dir)."""
  train = bound(run_config_lib.TRAIN)
  builders = {s.name: dict(bound(s)) for s in run_config_lib.BUILDERS}
  algorithm = algorithms.get_algorithm(train.get('mode', run_config_lib.Train.mode))
  settings = dict(bound(algorithm.settings_group()))
  return run_config_lib.RunConfig.from_bindings(
      train, builders, settings, gin_text=gin.config_str(),
      operative_gin_text=gin.operative_config_str())


def parse(gin_files: Sequence[str], gin_bindings: Sequence[str]) -> None:
  """Parses `gin_files` then `gin_bindings` into gin (not finalized); any gin error becomes a
  ConfigError naming the fix. `include`s are found in the working directory, then in the
  checkout's gin/ (GIN_DIR) and each file's gin/ root (`include_roots`)."""
  for name in gin_files:
    if not os.path.isfile(name):
      raise errors.ConfigError(f'gin file {name} does not exist (see gin/README.md for the '
                               'list of configs, or `bin/cells`)')
  verbosity, root_level = logging.get_verbosity(), std_logging.root.level
  # gin logs an ERROR for every search path an `include` is not found in before the one
  # where it is; real failures raise. It logs to Python's root logger, which absl's
  # verbosity governs only under absl.app (the programs), not in the Python API.
  logging.set_verbosity(logging.FATAL)
  std_logging.root.setLevel(std_logging.CRITICAL)
  _INCLUDE_ROOTS[:] = include_roots(gin_files)
  try:
    gin.parse_config_files_and_bindings(gin_files, gin_bindings, finalize_config=False)
  except Exception as e:  # gin raises ValueError, KeyError, SyntaxError, IOError...
    message = str(e).strip().replace('\n', ' ')
    raise errors.ConfigError(
        f'bad gin configuration: {message}. Check the spelling of the binding against the '
        'parameters documented in tf_ipmssl (e.g. `train.steps = 100`).') from None
  finally:
    _INCLUDE_ROOTS.clear()
    std_logging.root.setLevel(root_level)
    logging.set_verbosity(verbosity)


def include_roots(gin_files: Sequence[str]) -> List[str]:
  """Where `include` statements are resolved besides the working directory: the checkout's
  gin/ and each file's folders up to its gin/ root."""
  roots = [str(GIN_DIR)]
  for name in gin_files:
    for parent in pathlib.Path(name).resolve().parents:
      roots.append(str(parent))
      if parent.name == 'gin':
        break
  return list(dict.fromkeys(roots))


# The include roots of the parse in progress (empty outside `parse`), read by the file reader
# registered below: gin's own search paths (add_config_file_search_path, which nothing can
# take back) stay as the process has them.
_INCLUDE_ROOTS: List[str] = []


def _in_include_roots(path):
  """The file `path` names in the first include root that holds it; None if none does."""
  if os.path.isabs(path):
    return None
  for root in _INCLUDE_ROOTS:
    candidate = os.path.join(root, path)
    if os.path.isfile(candidate):
      return candidate
  return None


def _open_in_include_roots(path):
  return open(_in_include_roots(path))  # pylint: disable=unspecified-encoding


# gin tries its readers in order (the working directory's `open` first); this one answers only
# during `parse`.
gin.config.register_file_reader(_open_in_include_roots,
                                lambda path: _in_include_roots(path) is not None)


@contextlib.contextmanager
def isolated():
  """gin's global configuration empty for the block, then put back as it was (every binding
  the process had parsed, and whether it was locked), through gin's public API: the Python
  API's calls, which read their own files and bindings alone."""
  saved, locked = gin.config_str(), gin.config_is_locked()
  gin.clear_config()
  try:
    yield
  finally:
    gin.clear_config()
    if saved:
      gin.parse_config(saved)
    if locked:
      gin.finalize()


register(run_config_lib.TRAIN, other_names=True)
for _group in run_config_lib.BUILDERS:
  register(_group)

# Algorithm names given to gin in this process (gin cannot forget one: an algorithm
# registered again under a name keeps the settings gin first registered under it).
_ALGORITHM_NAMES = set()


def _register_algorithm(cls):
  """`<name>.<setting>` in gin: the settings of algorithm `cls`, read by `bound`."""
  if cls.name not in _ALGORITHM_NAMES:
    register(cls.settings_group())
    _ALGORITHM_NAMES.add(cls.name)


algorithms.REGISTRY.follow(_register_algorithm)

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
  _register_unqualified(name, make)
  _CONSTRAINT_NAMES.add(name)


constraint.REGISTRY.follow(_register_constraint)


def gin_text(config: run_config_lib.RunConfig) -> str:
  """gin bindings that make `config` again (`parse` then `run_config()`): every setting of
  every group, defaults included, in the order run_config.json lists the groups. A
  constraint becomes a scoped reference, `@constraint_0/Fisher()`, with its fields bound in
  that scope. What a run trained from a configuration object writes as its config.gin."""
  lines, scoped = [], []  # scoped: each constraint's lines, in the order of their scopes.
  for group, values in config.groups().items():
    lines += [f'{group}.{name} = {_gin_value(value, scoped)}'
              for name, value in sorted(values.items())]
  return '\n'.join(lines + [line for block in scoped for line in block]) + '\n'


def _gin_value(value, scoped) -> str:
  """`value` in gin's syntax; a constraint's lines appended to `scoped` as one block."""
  if isinstance(value, constraint.Constraint):
    scope = f'constraint_{len(scoped)}'
    name = type(value).__name__
    scoped.append([f'# {scope}: {value.name}'])
    scoped[-1] += [f'{scope}/{name}.{field.name} = '
                   f'{_gin_value(getattr(value, field.name), scoped)}'
                   for field in dataclasses.fields(value)]
    return f'@{scope}/{name}()'
  if isinstance(value, (tuple, list)):
    items = [_gin_value(v, scoped) for v in value]
    return f'({items[0]},)' if len(items) == 1 else f'({", ".join(items)})'
  if isinstance(value, float) and math.isinf(value):
    return '1e999' if value > 0 else '-1e999'  # gin reads Python literals: inf overflows.
  if isinstance(value, float) and math.isnan(value):
    raise errors.ConfigError('a setting is NaN, which gin cannot hold')
  if value is None or isinstance(value, (bool, int, float, str)):
    return repr(value)
  raise errors.ConfigError(f'{value!r} ({type(value).__name__}) cannot be written as gin')
