"""What a run trains (train.mode): one class per algorithm, registered by name.

An algorithm is a subclass of `Algorithm` (itself a steps.TrainingSteps: the run's networks,
optimizers and counters with the pieces every iteration shares) that owns its iteration and
its settings. Its class methods say what the run needs before anything is built (its
settings, constraints and data, what an epoch is, whether it trains a generator); an
instance, made by run.Run.training_steps, runs the iterations. The library's two:

- semi_supervised.SemiSupervised ('ssl', docs/algorithm.md#training-loop): n_c critic
  iterations on labeled, unlabeled and generated batches, then one generator iteration.
- supervised.Supervised ('supervised', paper Appendix C): the critic's classifier with the
  labeled cross-entropy only.

An algorithm's settings are its own: a frozen dataclass `Settings` (by default without
fields), each field a setting with its default, bound in gin under the algorithm's name
(`ssl.lambda_ce = 1.5`, registered by the gin boundary, tf_ipmssl/configurables.py, through
`when_registered`). `make_settings` completes and validates the bound values (`check_settings`:
a ConfigError naming `<name>.<setting>` and the fix); the run configuration holds the result
(run_config.RunConfig.objective.settings) and writes it to run_config.json and the HParams.

A new algorithm is one module: a subclass decorated with `@register` (its `name` is the
value of train.mode); a second class of a registered name is refused. A gin file can
`import` the module that registers it. `registered(cls)` registers a class for the
duration of a `with` block only (tests).
"""
import contextlib
import dataclasses
import inspect
from typing import Callable

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.training import steps as steps_lib

# Registered algorithm classes by name, in registration order.
_ALGORITHMS = {}
# What `register` calls with each new class (when_registered).
_CALLBACKS = []


@dataclasses.dataclass(frozen=True)
class NoSettings:
  """The settings of an algorithm that has none."""


class Algorithm(steps_lib.TrainingSteps):
  """The interface (see the module doc); `name` is train.mode's value and the gin name of
  its settings.

  The defaults are those of an algorithm without settings that trains the critic alone, one
  update per step, with no constraint; a subclass overrides what differs.
  """
  name = None
  # The algorithm's settings: a frozen dataclass whose fields all have defaults.
  Settings = NoSettings
  # Whether the run has (and logs, samples, checkpoints) a generator.
  trains_generator = False
  # Whether bin/diagnose can split the critic's gradient into its IPM, CE and constraint
  # terms (diagnosis.py): the critic objective is critic_objective.critic_objective with the
  # settings formulation, lambda_ce, reference_pairwise_f and ipm_rampup_updates.
  splits_critic_gradient = False
  # The training streams `train_iteration` reads, in this order: 'labeled' (images and
  # labels) and 'unlabeled' (images); an epoch is a pass over `epoch_set`.
  reads = ('labeled',)
  epoch_set = 'labeled'

  @classmethod
  def settings_spec(cls) -> builder_settings.Settings:
    """The settings as gin names them (`<name>.<field>`) with their defaults."""
    return builder_settings.Settings(cls.name, tuple(
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
        for f in dataclasses.fields(cls.Settings)))

  @classmethod
  def make_settings(cls, given) -> 'Settings':
    """The Settings of the bound values `given` (a mapping; the defaults for the rest),
    validated; a ConfigError for an unknown name or a bad value."""
    settings = cls.Settings(**cls.settings_spec().complete(given))
    cls.check_settings(settings)
    return settings

  @classmethod
  def check_settings(cls, settings) -> None:
    """A ConfigError naming `<name>.<setting>` and the fix for a bad value (the constraints
    are checked by `constraints`)."""
    del settings

  @classmethod
  def constraints(cls, settings) -> tuple:
    """The validated critic constraints the run uses, from its settings (by default none:
    the critic is not an IPM critic)."""
    del settings
    return ()

  @classmethod
  def epoch_size(cls, data) -> int:
    """The examples one epoch passes over."""
    return len(getattr(data, f'{cls.epoch_set}_images'))

  @classmethod
  def iterations_per_step(cls, settings) -> int:
    """Critic updates per training step (by default one)."""
    del settings
    return 1

  @classmethod
  def state_scalars(cls, settings, critic_iteration) -> dict:
    """Scalars of the algorithm's schedule at `critic_iteration` updates done, logged with
    the iteration's values (by default none)."""
    del settings, critic_iteration
    return {}

  @classmethod
  def scaled_settings(cls, settings) -> str:
    """What the run's scale settings changed, for the start of the run ('' for nothing)."""
    del settings
    return ''

  @classmethod
  def check_data(cls, data) -> None:
    """A ConfigError when the data cannot train this algorithm."""
    del data

  @classmethod
  def streams(cls, data, stream) -> tuple:
    """The distributed iterators of `reads`, made by `stream(images, labels, seed_offset)`
    from the arrays of `data` (ssl_data.SSLData); each stream has its own seed offset."""
    sources = {'labeled': (data.labeled_images, data.labeled_labels, 0),
               'unlabeled': (data.unlabeled_images, None, 1)}
    return tuple(stream(*sources[name]) for name in cls.reads)


def register(cls):
  """Class decorator: `cls` (an Algorithm subclass) becomes the algorithm train.mode = its
  `name` names, and is passed to the `when_registered` callbacks. Raises ValueError when
  another class has that name, TypeError when its Settings is not a frozen dataclass whose
  fields have defaults."""
  if not (isinstance(cls, type) and issubclass(cls, Algorithm)) or not cls.name:
    raise TypeError(f'{cls!r} is not an Algorithm subclass with a name')
  if cls.name in _ALGORITHMS:
    raise ValueError(f'an algorithm named {cls.name!r} is already registered '
                     f'({_ALGORITHMS[cls.name].__module__}); give the new class another name')
  settings = cls.Settings
  if not (dataclasses.is_dataclass(settings) and settings.__dataclass_params__.frozen and all(
      f.default is not dataclasses.MISSING for f in dataclasses.fields(settings))):
    raise TypeError(f'{cls.__name__}.Settings is not a frozen dataclass whose fields all '
                    'have defaults')
  _ALGORITHMS[cls.name] = cls
  for callback in tuple(_CALLBACKS):
    callback(cls)
  return cls


def when_registered(callback: Callable[[type], None]) -> None:
  """Calls `callback(cls)` for every registered algorithm class, now and at each later
  registration (the gin boundary registers each one's settings this way)."""
  _CALLBACKS.append(callback)
  for cls in tuple(_ALGORITHMS.values()):
    callback(cls)


@contextlib.contextmanager
def registered(cls):
  """Registers algorithm class `cls` for the `with` block only (tests); yields it."""
  register(cls)
  try:
    yield cls
  finally:
    del _ALGORITHMS[cls.name]


def registered_names() -> tuple:
  """Names of the registered algorithms (those of imported modules), in registration order."""
  return tuple(_ALGORITHMS)


def get_algorithm(mode):
  """The algorithm class of train.mode; a ConfigError for an unknown mode."""
  if mode not in _ALGORITHMS:
    raise errors.ConfigError(f'train.mode = {mode!r} is not one of {list(_ALGORITHMS)} '
                             '(an algorithm of your own: import the module that registers it)')
  return _ALGORITHMS[mode]
