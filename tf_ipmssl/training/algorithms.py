"""What a run trains (train.mode): one class per algorithm, registered by name.

An algorithm is a subclass of `Algorithm` that owns its iteration and its settings. Its
class methods say what the run needs before anything is built (its settings, constraints and
data, what an epoch is, whether it trains a generator); an instance, made by
run.Run.make_algorithm from a `StepConfig`, holds the run's networks, optimizers,
multipliers and counters and runs the iterations under a tf.distribute strategy. The
library's two:

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

What every algorithm's iterations share is in `Algorithm`: the optional XLA compilation of a
replica's gradient computation, loss scaling, coupled weight decay, the labeled
cross-entropy, the weight average, the step counter and the non-finite check. Each algorithm
writes its own iteration (`train_iteration`) from these; `iteration` is its compiled form.
Tapes and optimizer calls run inside `strategy.run`; whatever updates variables shared by the
replicas runs in cross-replica context with values identical on every replica.

A new algorithm is one module: a subclass decorated with `@register` (its `name` is the
value of train.mode); a second class of a registered name is refused. A gin file can
`import` the module that registers it. `registered(cls)` registers a class for the
duration of a `with` block only (tests).
"""
import contextlib
import dataclasses
from typing import Any, Callable

import tensorflow as tf

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl.objectives import critic_objective as critic_objective_lib
from tf_ipmssl.objectives import weight_decay
from tf_ipmssl.training import weight_averaging

# Registered algorithm classes by name, in registration order.
_ALGORITHMS = {}
# What `register` calls with each new class (when_registered).
_CALLBACKS = []


def global_norm(tensors):
  return tf.linalg.global_norm([t for t in tensors if t is not None])


@dataclasses.dataclass(frozen=True)
class StepConfig:
  """What a run's training iterations compute: its run_config.RunConfig, and how the
  iterations are run. Every setting of the run is read from `run_config` or `settings`,
  never restated here; `of` derives the configuration, the benchmark changes the last two
  fields.

  Attributes:
    run_config: the RunConfig (batch, seed, weight decays, XLA, loss scaling, weight
      average, the constraints the algorithm uses).
    settings: the algorithm's settings (the run's `objective.settings`; the benchmark
      changes ssl's critic_iterations).
    critic_forward: how the critic objective passes the batches through the critic: 'auto'
      (separate passes iff the critic has batch norm), 'batched' or 'separate'
      (critic_objective.is_batched).
  """
  run_config: Any
  settings: Any
  critic_forward: str

  @classmethod
  def of(cls, run_config, **changes) -> 'StepConfig':
    """The step configuration of RunConfig `run_config`; `changes`: settings or
    critic_forward (the benchmark's variants)."""
    return dataclasses.replace(cls(run_config, run_config.objective.settings, 'auto'),
                               **changes)


@dataclasses.dataclass(frozen=True)
class NoSettings:
  """The settings of an algorithm that has none."""


class Algorithm:
  """The interface (see the module doc); `name` is train.mode's value and the gin name of
  its settings.

  The defaults are those of an algorithm without settings that trains the critic alone, one
  update per step, with no constraint; a subclass overrides what differs and defines
  `train_iteration(*iterators)`, one training iteration in cross-replica context on the
  distributed iterators of its `streams`, compiling its per-replica gradient computations
  with `compile_piece`.
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
    return builder_settings.Settings.of_dataclass(cls.name, cls.Settings)

  @classmethod
  def make_settings(cls, given) -> 'Settings':
    """The Settings of the bound values `given` (a mapping; the defaults for the rest),
    validated; a ConfigError for an unknown name or a bad value."""
    settings = cls.settings_spec().make(given)
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
    """The distributed iterators of `reads`, made by `stream(name, images, labels,
    seed_offset)` from the arrays of `data` (ssl_data.SSLData); each stream has its own seed
    offset, and its name says which augmentation it gets (augmentation.STREAMS)."""
    sources = {'labeled': (data.labeled_images, data.labeled_labels, 0),
               'unlabeled': (data.unlabeled_images, None, 1)}
    return tuple(stream(name, *sources[name]) for name in cls.reads)

  # ----- an instance: the run's networks and state -----

  def __init__(self, config, *, strategy, critic, generator, critic_optimizer,
               generator_optimizer, multipliers, counters, averaged_critic=None):
    """Args:
      config: the StepConfig of the run.
      strategy: the tf.distribute strategy the networks were built under.
      critic, generator: the networks (generator None where the algorithm trains none);
        optimizers: their (built) optimizers.
      multipliers: λ variable per multiplier constraint, keyed by constraint name.
      counters: dict of the 'step', 'critic_iteration' and 'nonfinite' variables.
      averaged_critic: None, or the weight average updated after every critic step
        (weight_averaging.py) with decay train.critic_ema_decay.
    """
    if config.run_config.loop.batch_size % strategy.num_replicas_in_sync:
      raise errors.ConfigError(
          f'the batch size {config.run_config.loop.batch_size} does not split evenly over '
          f'{strategy.num_replicas_in_sync} replicas; choose a multiple of the replica count')
    critic_objective_lib.is_batched(critic, config.critic_forward)  # ValueError if it can't.
    self.config = config
    self.run_config, self.objective = config.run_config, config.run_config.objective
    self.settings = config.settings
    self.strategy = strategy
    self.critic = critic
    self.generator = generator
    self.critic_optimizer = critic_optimizer
    self.generator_optimizer = generator_optimizer
    self.multipliers = multipliers
    self.counters = counters
    self.average_pairs = (weight_averaging.averaged_pairs(critic, averaged_critic)
                          if averaged_critic is not None else None)
    # XLA compiles the forward/backward computation of one replica. All-reduces (global
    # moments, synchronized batch norm) cannot sit in a nested tf.function under several
    # replicas, so XLA is used on one replica only; otherwise the pieces are traced inline.
    self.jit_compile = config.run_config.numerics.jit_compile and strategy.num_replicas_in_sync == 1
    self.iteration = tf.function(self.train_iteration)

  def train_iteration(self, *iterators):
    """One training iteration on the distributed iterators; returns the logged values."""
    raise NotImplementedError

  def compile_piece(self, fn):
    """`fn` (a replica's gradient computation) XLA-compiled when the run asks for it."""
    return tf.function(fn, jit_compile=True) if self.jit_compile else fn

  # ----- in a replica's context -----

  def scaled(self, optimizer, loss):
    return optimizer.scale_loss(loss) if self.run_config.numerics.loss_scaling else loss

  def with_decay(self, optimizer, grads, variables, decays):
    replicas = self.strategy.num_replicas_in_sync
    scale = optimizer.scale_loss(1.0) if self.run_config.numerics.loss_scaling else 1.0
    decays = [d * scale for d in decays]
    return weight_decay.add_coupled_weight_decay(grads, variables, decays, replicas)

  def labeled_cross_entropy(self, x_labeled, y_labeled):
    """The classifier's mean cross-entropy and accuracy on a replica's labeled batch (each
    summed over the replica's examples, divided by the global batch)."""
    logits = tf.cast(self.critic.classify(x_labeled, training=True), tf.float32)
    labels = tf.cast(y_labeled, tf.int32)
    batch = self.run_config.loop.batch_size
    ce = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits)) / batch
    accuracy = tf.reduce_sum(tf.cast(tf.equal(
        tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)) / batch
    return ce, accuracy

  # ----- in cross-replica context -----

  def first_replica(self, values):
    return tf.nest.map_structure(
        lambda v: self.strategy.experimental_local_results(v)[0], values)

  def count_critic_update(self):
    """After a critic update: the update counter, then the weight average."""
    self.counters['critic_iteration'].assign_add(1)
    if self.average_pairs is not None:
      weight_averaging.update_average(self.average_pairs, self.run_config.numerics.critic_ema_decay,
                                      self.counters['critic_iteration'].read_value())

  def end_iteration(self, values):
    """After an iteration: the step counter, and a non-finite value of `values` counted."""
    self.counters['step'].assign_add(1)
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(tf.cast(v, tf.float32)))
                            for v in tf.nest.flatten(values)])
    self.counters['nonfinite'].assign_add(tf.cast(tf.logical_not(finite), tf.int64))
    return values


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
