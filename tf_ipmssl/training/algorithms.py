"""What a run trains (train.mode): one class per algorithm, registered by name.

An algorithm is a subclass of `Algorithm` that owns its training step and its settings. Its
class methods say what the run needs before anything is built (its settings, constraints and
data, what an epoch is, whether it trains a generator); an instance, made by the trainer as
`config.algorithm(run, strategy)`, updates that run.Run: its networks, optimizers,
multipliers and counters are the run's, read as `self.run.critic`, `self.run.state.counters`,
and so on. The library's two:

- semi_supervised.SemiSupervised ('ssl', docs/algorithm.md#training-loop): n_c critic
  updates on labeled, unlabeled and generated batches, then one generator update.
- supervised.Supervised ('supervised', paper Appendix C): the critic's classifier with the
  labeled cross-entropy only.

An algorithm's settings are its own: a frozen dataclass `Settings` (by default without
fields), each field a setting with its default, bound in gin under the algorithm's name
(`ssl.lambda_ce = 1.5`, given to gin by tf_ipmssl/configurables.py, which follows the
registry). The dataclass validates itself when made (its `__post_init__`: a
ConfigError naming `<name>.<setting>` and the fix); `make_settings` completes the bound
values with the defaults and makes it; the run configuration holds the result
(run_config.RunConfig.algorithm_settings) and writes it to run_config.json and the HParams
under the algorithm's name.

An instance's `train_step(*iterators)` is one training step on the distributed iterators
of its `streams`, in cross-replica context; the subclass writes it in its own module,
decorated with `@tf.function` (one graph, traced at the first call), and the training loop
calls it once per step. Tapes and optimizer calls run inside `strategy.run`; whatever updates
variables shared by the replicas runs in cross-replica context with values identical on every
replica. What every algorithm's step needs is a few named pieces of `Algorithm`, in the
order a step calls them:

  compile_piece(fn)           (in __init__) a replica's gradient computation, XLA-compiled
                              when the run asks for it
  gradients(tape, loss, ...)  in a replica: ∇loss, loss-scaled when the run scales losses, plus
                              the coupled weight decay
  first_replica(values)       the values of the first replica (identical on every replica)
  count_critic_update()       after a critic update: the update counter, the weight average
  end_step(values)            the step counter; a non-finite logged value is counted

and `global_norm(gradients)`, the logged gradient norm.

The registered algorithms are a registry.Registry (`REGISTRY`), which lists the library's
own (tf_ipmssl/library.py) at its first use. A new algorithm is one module: a subclass
decorated with `@register` (its `name` is the value of train.mode); a second class of a
registered name is refused. A gin file can `import` the module that registers it.
`REGISTRY.registered(cls)` registers a class for the duration of a `with` block only
(tests).
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl import builder_settings
from tf_ipmssl import errors
from tf_ipmssl import registry
from tf_ipmssl.objectives import critic_objective as critic_objective_lib
from tf_ipmssl.objectives import weight_decay
from tf_ipmssl.training import weight_averaging

def global_norm(gradients):
  """The global norm of `gradients` (those that are not None)."""
  return tf.linalg.global_norm([g for g in gradients if g is not None])


@dataclasses.dataclass(frozen=True)
class NoSettings:
  """The settings of an algorithm that has none."""


class Algorithm:
  """The interface (see the module doc); `name` is train.mode's value and the gin name of
  its settings.

  The defaults are those of an algorithm without settings that trains the critic alone, one
  update per step, with no constraint; a subclass overrides what differs and defines
  `train_step(*iterators)`, decorated with `@tf.function`.
  """
  name = None
  # The algorithm's settings: a frozen dataclass whose fields all have defaults.
  Settings = NoSettings
  # Whether the run has (and logs, samples, checkpoints) a generator.
  trains_generator = False
  # Whether bin/diagnose can split the critic's gradient into its IPM, CE and constraint
  # terms (tf_ipmssl/diagnosis.py): the critic objective is critic_objective.critic_objective
  # with the settings formulation, lambda_ce, reference_pairwise_f and ipm_rampup_updates.
  splits_critic_gradient = False
  # The training streams `train_step` reads, in this order: 'labeled' (images and labels)
  # and 'unlabeled' (images); an epoch is a pass over `epoch_set`.
  reads = ('labeled',)
  epoch_set = 'labeled'

  @classmethod
  def settings_group(cls) -> builder_settings.Group:
    """The settings as gin names them (`<name>.<field>`) with their defaults."""
    return builder_settings.Group.of_dataclass(cls.name, cls.Settings)

  @classmethod
  def make_settings(cls, given) -> 'Settings':
    """The Settings of the bound values `given` (a mapping; the defaults for the rest),
    which validate themselves when made; a ConfigError for an unknown name or a bad
    value."""
    return cls.settings_group().make(given)

  @classmethod
  def constraints(cls, settings) -> tuple:
    """The critic constraints the run uses, from its (validated) settings (by default none:
    the critic is not an IPM critic)."""
    del settings
    return ()

  @classmethod
  def epoch_size(cls, data) -> int:
    """The examples one epoch passes over."""
    return len(getattr(data, f'{cls.epoch_set}_images'))

  @classmethod
  def critic_updates_per_step(cls, settings) -> int:
    """Critic updates per training step (by default one)."""
    del settings
    return 1

  @classmethod
  def state_scalars(cls, settings, critic_updates) -> dict:
    """Scalars of the algorithm's schedule after `critic_updates` critic updates, logged
    with the step's values (by default none)."""
    del settings, critic_updates
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

  # ----- an instance: the run it updates -----

  def __init__(self, run, strategy=None, settings=None, critic_forward='auto'):
    """Every setting is read from the run's RunConfig (`self.run_config`) and the
    algorithm's settings (`self.settings`), never restated here.

    Args:
      run: the run.Run it updates (networks, optimizers, multipliers and counters); its
        generator is None where the algorithm trains none.
      strategy: the tf.distribute strategy the run was built under (default: the current
        one).
      settings: the algorithm's settings; None: the run's (`algorithm_settings`). The
        benchmark changes ssl's critic_iterations this way.
      critic_forward: how the critic objective passes the batches through the critic:
        'auto' (separate passes iff the critic has batch norm), 'batched' or 'separate'
        (critic_objective.is_batched; the benchmark's variants).
    """
    self.run = run
    self.run_config = run.config
    self.settings = run.config.algorithm_settings if settings is None else settings
    self.critic_forward = critic_forward
    self.strategy = strategy or tf.distribute.get_strategy()
    replicas = self.strategy.num_replicas_in_sync
    if self.run_config.train.batch_size % replicas:
      raise errors.ConfigError(
          f'the batch size {self.run_config.train.batch_size} does not split evenly over '
          f'{replicas} replicas; choose a multiple of the replica count')
    # A ValueError for a critic forward mode the critic cannot take.
    critic_objective_lib.is_batched(run.critic, self.critic_forward)
    self.average_pairs = (weight_averaging.averaged_pairs(run.critic, run.averaged_critic)
                          if run.averaged_critic is not None else None)
    # XLA compiles the forward/backward computation of one replica. All-reduces (global
    # moments, synchronized batch norm) cannot sit in a nested tf.function under several
    # replicas, so XLA is used on one replica only; otherwise the pieces are traced inline.
    self.jit_compile = self.run_config.train.jit_compile and replicas == 1

  def train_step(self, *iterators):
    """One training step on the distributed iterators, in cross-replica context;
    returns the logged values. A subclass defines it with `@tf.function`."""
    raise NotImplementedError

  def compile_piece(self, fn):
    """`fn` (a replica's gradient computation) XLA-compiled when the run asks for it."""
    return tf.function(fn, jit_compile=True, autograph=False) if self.jit_compile else fn

  # ----- in a replica's context -----

  def gradients(self, tape, loss, variables, optimizer, decays=None):
    """∇loss over `variables` (`loss` computed under `tape`), plus the coupled weight decay
    wd·w of each variable for `decays` (weight_decay.py; None: no decay).

    When the run scales losses (mixed_float16), both are multiplied by `optimizer`'s loss
    scale, which its apply_gradients divides out: the tape differentiates `loss` with the
    scale as the output gradient, which is the gradient of the scaled loss.
    """
    scale = optimizer.scale_loss(1.0) if self.run_config.loss_scaling else None
    grads = tape.gradient(
        loss, variables, output_gradients=None if scale is None else tf.cast(scale, loss.dtype))
    if decays is None:
      return grads
    if scale is not None:
      decays = [d * scale for d in decays]
    return weight_decay.add_coupled_weight_decay(grads, variables, decays,
                                                 self.strategy.num_replicas_in_sync)

  # ----- in cross-replica context -----

  def first_replica(self, values):
    """The first replica's part of each per-replica value of `values` (a structure)."""
    return tf.nest.map_structure(
        lambda v: self.strategy.experimental_local_results(v)[0], values)

  def count_critic_update(self):
    """After a critic update: the update counter, then the weight average."""
    counters = self.run.state.counters
    counters['critic_updates'].assign_add(1)
    if self.average_pairs is not None:
      weight_averaging.update_average(self.average_pairs,
                                      self.run_config.train.critic_ema_decay,
                                      counters['critic_updates'].read_value())

  def end_step(self, values):
    """After a step: the step counter, and a non-finite value of `values` counted;
    returns `values`."""
    counters = self.run.state.counters
    counters['step'].assign_add(1)
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(tf.cast(v, tf.float32)))
                            for v in tf.nest.flatten(values)])
    counters['nonfinite'].assign_add(tf.cast(tf.logical_not(finite), tf.int64))
    return values


def _check_algorithm(cls):
  """TypeError unless `cls` is an Algorithm subclass with a name, a Settings that is a frozen
  dataclass whose fields have defaults and a `train_step` that is a tf.function."""
  if not (isinstance(cls, type) and issubclass(cls, Algorithm)) or not cls.name:
    raise TypeError(f'{cls!r} is not an Algorithm subclass with a name')
  settings = cls.Settings
  if not (dataclasses.is_dataclass(settings) and settings.__dataclass_params__.frozen and all(
      f.default is not dataclasses.MISSING for f in dataclasses.fields(settings))):
    raise TypeError(f'{cls.__name__}.Settings is not a frozen dataclass whose fields all '
                    'have defaults')
  if not isinstance(cls.train_step, tf.types.experimental.PolymorphicFunction):
    raise TypeError(f'{cls.__name__}.train_step is not a tf.function: decorate it with '
                    '@tf.function (each training step then runs as one graph)')


# The registered algorithms by name (train.mode), the library's (library.ALGORITHMS) first.
REGISTRY = registry.Registry('algorithm', lambda cls: cls.name, _check_algorithm,
                             library=('tf_ipmssl.library', 'ALGORITHMS'))
# Class decorator: the class becomes the algorithm train.mode = its `name` names (ValueError
# for a name already registered, TypeError for a class _check_algorithm refuses).
register = REGISTRY.register


def get_algorithm(mode):
  """The algorithm class of train.mode; a ConfigError for an unknown mode."""
  cls = REGISTRY.lookup(mode)
  if cls is None:
    raise errors.ConfigError(f'train.mode = {mode!r} is not one of {list(REGISTRY.names())} '
                             '(an algorithm of your own: import the module that registers it)')
  return cls
