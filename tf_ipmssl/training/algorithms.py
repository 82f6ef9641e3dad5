"""What a run trains (train.mode): one class per algorithm, registered by name.

An algorithm is a subclass of `Algorithm` (itself a steps.TrainingSteps: the run's networks,
optimizers and counters with the pieces every iteration shares) that owns its iteration.
Its class methods say what the run needs before anything is built (its constraints, its
data, what an epoch is, whether it trains a generator); an instance, made by
run.Run.training_steps, runs the iterations. The library's two:

- semi_supervised.SemiSupervised ('ssl', docs/algorithm.md#training-loop): n_c critic
  iterations on labeled, unlabeled and generated batches, then one generator iteration.
- supervised.Supervised ('supervised', paper Appendix C): the critic's classifier with the
  labeled cross-entropy only.

A new algorithm is one module: a subclass decorated with `@register` (its `name` is the
value of train.mode); a second class of a registered name is refused. A gin file can
`import` the module that registers it. `registered(cls)` registers a class for the
duration of a `with` block only (tests).
"""
import contextlib

from tf_ipmssl import errors
from tf_ipmssl.training import steps as steps_lib

# Registered algorithm classes by name, in registration order.
_ALGORITHMS = {}


class Algorithm(steps_lib.TrainingSteps):
  """The interface (see the module doc); `name` is train.mode's value.

  The defaults are those of an algorithm that trains the critic alone, one update per step,
  with no constraint; a subclass overrides what differs.
  """
  name = None
  # Whether the run has (and logs, samples, checkpoints) a generator.
  trains_generator = False
  # The training streams `train_iteration` reads, in this order: 'labeled' (images and
  # labels) and 'unlabeled' (images); an epoch is a pass over `epoch_set`.
  reads = ('labeled',)
  epoch_set = 'labeled'

  @classmethod
  def constraints(cls, formulation, constraints) -> tuple:
    """The validated critic constraints the run uses (by default none: the critic is not
    an IPM critic, train.constraints is not used)."""
    del formulation, constraints
    return ()

  @classmethod
  def epoch_size(cls, data) -> int:
    """The examples one epoch passes over."""
    return len(getattr(data, f'{cls.epoch_set}_images'))

  @classmethod
  def iterations_per_step(cls, critic_iterations: int) -> int:
    """Critic updates per training step (by default one: train.critic_iterations is not
    used)."""
    del critic_iterations
    return 1

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
  `name` names. Raises ValueError when another class has that name."""
  if not (isinstance(cls, type) and issubclass(cls, Algorithm)) or not cls.name:
    raise TypeError(f'{cls!r} is not an Algorithm subclass with a name')
  if cls.name in _ALGORITHMS:
    raise ValueError(f'an algorithm named {cls.name!r} is already registered '
                     f'({_ALGORITHMS[cls.name].__module__}); give the new class another name')
  _ALGORITHMS[cls.name] = cls
  return cls


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
