"""A run's configuration: the whole run as one frozen, validated object.

gin is the user's interface; a program reads it once, at its boundary
(tf_ipmssl/configurables.py, the one module that speaks to gin), into a RunConfig that
everything below receives explicitly. This module is plain data: it imports neither gin nor
an algorithm (it finds the algorithm train.mode names, and a stored constraint's class,
in their registries). Its attribute paths are the gin names: `config.train.seed` is
`train.seed`, `config.build_critic.width` is `build_critic.width`; the algorithm's settings
are `config.algorithm_settings` (`ssl.lambda_ce` is `config.algorithm_settings.lambda_ce`
when train.mode = 'ssl'). Each group is a frozen dataclass declared in the module that reads
it, its fields documented there, that validates itself when made (a ConfigError naming the
binding): `Train` (below: `train.*`), ssl_data_settings.BuildSslData (`build_ssl_data.*`),
critic.BuildCritic (`build_critic.*`), generator.BuildGenerator (`build_generator.*`),
distribution.MakeStrategy (`make_strategy.*`), augmentation.Augmentations
(`augmentation.*`), the algorithm's own `Settings` (algorithms.py) and each constraint
(objectives/constraint.py). A RunConfig checks what spans groups when it is made (the
algorithm train.mode names and its settings' class, the augmentation of the streams the
algorithm reads at the run's image size), so a RunConfig that exists is valid.

What the run derives from the settings is a property: `algorithm` (the
algorithms.Algorithm subclass train.mode names), `constraints` (those the algorithm uses,
with ssl.constraint_penalty_scale applied), `critic_rate` and `generator_rate` (with
train.learning_rate_scale applied), `loss_scaling`, `image_size` (build_ssl_data.image_size,
held resolved: ssl_data_settings.image_size_of, the dataset's own where it is not bound;
the one image size of the run, which Run.build gives both networks) and `augmentations` (per
stream).

`configurables.run_config()` makes the configuration of the gin config a program parsed
(bin/train, before it touches the model dir); `RunConfig.create(...)` and
`from_bindings(...)` make one from dicts, without gin. `to_json()` is what the run writes
beside config.gin (run_config.json: one object per gin name, `{"train": {...}, "ssl":
{...}, "build_critic": {...}, ...}`, the settings as given) and `from_json(...)` rebuilds
the configuration from a run_config.json of any format, validated again, without gin
(run.run_config_of: evaluate, export, diagnose, a resume's identity check). The formats and
their history are in tf_ipmssl/run_dir/config_formats.py, whose `upgrade` brings an older
one to today's.
"""
import dataclasses
import difflib
import functools
import math
from typing import Any, Mapping, Optional, Tuple

from tf_ipmssl import builder_settings as builder_settings_lib
from tf_ipmssl import errors
from tf_ipmssl.data import augmentation as augmentation_lib
from tf_ipmssl.data import ssl_data_settings
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import constraint as constraint_lib
from tf_ipmssl.run_dir import baseline as baseline_lib
from tf_ipmssl.run_dir import config_formats
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import distribution as distribution_lib
from tf_ipmssl.training import optimizers as optimizers_lib

MIXED_PRECISION_POLICIES = (None, 'mixed_bfloat16', 'mixed_float16')

def _number(default, *, integer=False, optional=False, low=0.0):
  """A numeric train setting: its default, and the range Train checks (an integer or a
  float, None allowed where optional, at least `low`)."""
  return dataclasses.field(default=default, metadata={'number': (integer, optional, low)})


@dataclasses.dataclass(frozen=True)
class Train:
  """The run's own settings, `train.*` in gin: `config.train.<name>` is `train.<name>`."""
  # 'ssl' (the IPM GAN, docs/algorithm.md#training-loop; its settings are `ssl.*`,
  # semi_supervised.py), 'supervised' (the critic CNN with CE only, paper Appendix C; bind
  # build_ssl_data.num_labeled = None for all labels), or the name of another registered algorithm
  # (algorithms.py).
  mode: str = 'ssl'
  # Global batch of each of the labeled, unlabeled and generated batches.
  batch_size: int = _number(64, integer=True, low=1)
  # Passes of the critic updates over the unlabeled set (supervised: over the labeled set).
  # `critic_updates` overrides it, and `steps` overrides both.
  epochs: Optional[float] = _number(None, optional=True)
  # The training length in steps (SSL: each n_c critic updates and one generator update;
  # supervised: one update).
  steps: Optional[int] = _number(None, integer=True, optional=True, low=1)
  # The training length in critic updates (SSL: steps = critic_updates / n_c, rounded up;
  # supervised: steps = critic_updates), so that cells with different n_c train on the same number
  # of batches, as with `epochs`.
  critic_updates: Optional[int] = _number(None, integer=True, optional=True, low=1)
  # The optimizer of both networks: optimizers.OPTIMIZERS ('adam', PyTorch's as the
  # released code computes it, or 'rmsprop').
  optimizer: str = 'adam'
  # The optimizers' learning rates (the generator's where the algorithm trains one).
  critic_learning_rate: float = _number(2e-4)
  generator_learning_rate: float = _number(2e-4)
  # Adam's β1 and β2.
  adam_beta1: float = _number(0.5)
  adam_beta2: float = _number(0.999)
  # Adam's ε and where it is added: 'bias_corrected' (PyTorch's Adam, the released code; the
  # default) or 'keras' (keras.optimizers.Adam, ε on the uncorrected √v).
  adam_epsilon: float = _number(1e-8)
  adam_epsilon_placement: str = 'bias_corrected'
  # Halve both learning rates every this many epochs.
  learning_rate_halving_epochs: Optional[float] = _number(None, optional=True)
  # None (the paper), or a fraction in [0, 1) of the run's steps after which both learning rates
  # fall linearly to 0 at the last step (optimizers.py).
  learning_rate_linear_decay_start: Optional[float] = _number(None, optional=True)
  # The coupled weight decay of the critic's body and classifier head (Φ, S) and of its fake-logit
  # vector V (where the algorithm trains V).
  weight_decay_phi_s: float = _number(1e-6)
  weight_decay_v: float = _number(1e-3)
  # Init, shuffling, noise and dropout seed (the label split has its own,
  # build_ssl_data.split_seed).
  seed: int = _number(0, integer=True, low=0)
  # The periods of the log line, the evaluations, the checkpoints and the samples, in steps.
  log_every: int = _number(50, integer=True, low=1)
  eval_every: int = _number(1000, integer=True, low=1)
  checkpoint_every: int = _number(500, integer=True, low=1)
  sample_every: int = _number(1000, integer=True, low=1)
  # Checkpoints kept besides the best one.
  keep_checkpoints: int = _number(2, integer=True, low=1)
  # Batch of the evaluations (it changes no result).
  eval_batch_size: int = _number(256, integer=True, low=1)
  # None, or n: every evaluation also writes eval/validation_subset_error, the error on the
  # validation split's first n images of each class (in the split's seeded order): a small
  # validation split inside the large one, read from the same run (loop.validation_subset).
  # It changes no trained number and selects nothing.
  validation_subset_per_class: Optional[int] = _number(None, integer=True, optional=True,
                                                       low=1)
  # Also compute the test error at every evaluation (by default only at a new best
  # validation error and at the last step), so that the test error of the step any other
  # rule would select is in eval/test_error. It changes no trained number.
  test_every_evaluation: bool = False
  # XLA-compile each replica's forward/backward computation (its random draws differ from a run
  # without XLA: see random_streams).
  jit_compile: bool = False
  # None, 'mixed_bfloat16' or 'mixed_float16' (GPU; with loss scaling). Losses, Ω's and λ's stay
  # float32.
  mixed_precision: Optional[str] = None
  # Enable tf.config.experimental.enable_op_determinism() (bit-exact resume).
  deterministic_ops: bool = False
  # Write the SavedModel classifier to model_dir/export at the end.
  export_classifier: bool = True
  # None (the paper), or a decay in (0, 1): evaluate, select and export an exponential moving
  # average of the critic's weights (weight_averaging.py).
  critic_ema_decay: Optional[float] = None
  # None (train all the steps), or stop once the validation error has not improved for this many
  # steps (checked at evaluations; needs a validation split), but not before
  # `early_stopping_min_steps`. `steps`/`epochs` is then the maximum.
  early_stopping_patience: Optional[int] = _number(None, integer=True, optional=True, low=1)
  # The step before which early stopping never stops the run.
  early_stopping_min_steps: int = _number(0, integer=True, low=0)
  # None, or (runs.csv of a bin/sweep results table, baseline cell id[, recipe cell id]): the
  # final line shows the baseline's run on the same labels and the cells' means beside this run's
  # result (baseline.py).
  baseline: Optional[Tuple[str, ...]] = None
  # Multiplies both learning rates (1 in the paper's cells; a short-budget preset keeps each
  # cell's rates and their ratios, gin/presets/).
  learning_rate_scale: float = _number(1.0)

  def __post_init__(self):
    """ConfigErrors naming the binding: a run without a length, a number of the wrong type
    or range (each field's `_number`), an unknown choice."""
    if self.epochs is None and self.steps is None and self.critic_updates is None:
      raise errors.ConfigError('set the training length: train.epochs, train.critic_updates '
                               'or train.steps')
    for field in dataclasses.fields(self):
      if 'number' in field.metadata:
        integer, optional, low = field.metadata['number']
        errors.check_number(f'train.{field.name}', getattr(self, field.name),
                            integer=integer, low=low, optional=optional)
    if self.mixed_precision not in MIXED_PRECISION_POLICIES:
      raise errors.ConfigError(f'train.mixed_precision = {self.mixed_precision!r} is not one '
                               f'of {list(MIXED_PRECISION_POLICIES)}')
    optimizers_lib.check_optimizer(self.optimizer, self.adam_epsilon_placement)
    baseline_lib.check_spec(self.baseline)
    if isinstance(self.baseline, list):
      object.__setattr__(self, 'baseline', tuple(self.baseline))
    decay_start = self.learning_rate_linear_decay_start
    if decay_start is not None and not decay_start < 1.0:
      raise errors.ConfigError('train.learning_rate_linear_decay_start is a fraction of the '
                               f'run in [0, 1), got {decay_start!r}')
    ema = self.critic_ema_decay
    if ema is not None and not (isinstance(ema, float) and 0.0 < ema < 1.0):
      raise errors.ConfigError(f'train.critic_ema_decay must be None or a float in (0, 1), '
                               f'got {ema!r}')


# train.* in gin: the run's own settings.
TRAIN = builder_settings_lib.Group.of_dataclass('train', Train)
# The builders' settings a run holds besides train's, each a RunConfig field under its gin
# name (builder_settings.Group).
BUILDERS = (ssl_data_settings.GROUP, critic_lib.GROUP, generator_lib.GROUP,
            distribution_lib.GROUP, augmentation_lib.GROUP)

def default_bindings():
  """Every train binding at its default."""
  return {f.name: f.default for f in dataclasses.fields(Train)}


def _check_names(b):
  """ConfigErrors for train bindings `b` (a dict) of names that are not train settings: an
  algorithm's setting bound at its old place gets the name it has now."""
  unknown = set(b) - set(default_bindings())
  moved = [name for name in config_formats.SSL_SETTINGS_IN_TRAIN if name in unknown]
  if moved:
    raise errors.ConfigError('; '.join(_moved_message(name) for name in moved))
  if unknown:
    guesses = {g for name in unknown for g in difflib.get_close_matches(name, default_bindings())}
    raise errors.ConfigError(
        f'unknown train binding(s) {sorted(unknown)}' +
        (f' (did you mean {" or ".join(f"train.{g}" for g in sorted(guesses))}?)'
         if guesses else '') + '; the train settings are documented in '
        'tf_ipmssl/training/run_config.py')


def _moved_message(name):
  """How to bind `train.<name>`, a setting that moved to the algorithms having it."""
  owners = [algorithm for algorithm in algorithms.REGISTRY.names()
            if name in _field_names(algorithms.get_algorithm(algorithm).Settings)]
  new = ' or '.join(f'{owner}.{name}' for owner in owners) or f'<algorithm>.{name}'
  return (f'train.{name} is now a setting of the algorithm: bind {new} instead (e.g. '
          f'`{new.split(" or ")[0]} = ...` in place of `train.{name} = ...`)')


def _field_names(dataclass) -> tuple:
  return tuple(f.name for f in dataclasses.fields(dataclass))


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Every setting of a run, validated, each under its gin name (see the module doc)."""
  train: Train
  # The builders' settings (BUILDERS), each the frozen dataclass its builder declares and
  # takes (the run supplies the sizes and seed the builders take besides).
  build_ssl_data: ssl_data_settings.BuildSslData
  build_critic: critic_lib.BuildCritic
  build_generator: generator_lib.BuildGenerator
  make_strategy: distribution_lib.MakeStrategy
  augmentation: augmentation_lib.Augmentations
  # The algorithm's settings (its Settings, validated), bound in gin and written under the
  # algorithm's name (train.mode: `ssl.lambda_ce`).
  algorithm_settings: Any
  # The gin configuration it was read from (config.gin) and its operative part ('' without
  # gin).
  gin_text: str = dataclasses.field(default='', repr=False, compare=False)
  operative_gin_text: str = dataclasses.field(default='', repr=False, compare=False)

  def __post_init__(self):
    """The checks across groups, each group having checked itself when made: the
    algorithm train.mode names and its settings, the image size resolved (held as
    `build_ssl_data.image_size`), the augmentation of the streams the algorithm reads."""
    algorithm = algorithms.get_algorithm(self.train.mode)
    if not isinstance(self.algorithm_settings, algorithm.Settings):
      raise errors.ConfigError(f'the settings of train.mode = {self.train.mode!r} are '
                               f'{algorithm.Settings.__qualname__}, got '
                               f'{type(self.algorithm_settings).__qualname__}')
    object.__setattr__(self, 'build_ssl_data', _with_image_size(self.build_ssl_data))
    augmentation_lib.check(augmentation_lib.per_stream(self.augmentation),
                           self.build_ssl_data.image_size, algorithm.reads)

  @classmethod
  def from_bindings(cls, bindings, builders=None, settings=None,
                    **gin_texts) -> 'RunConfig':
    """The configuration of train bindings `bindings` (missing ones at their defaults), of
    the builders' settings `builders` ({'build_ssl_data': {...}, 'build_critic': ...}, by gin
    name, each completed with its defaults) and of the algorithm's settings `settings` (a
    dict; its defaults for the rest); a ConfigError naming the binding and the fix for any
    invalid field."""
    builders = builders or {}
    unknown = set(builders) - {s.name for s in BUILDERS}
    if unknown:
      raise errors.ConfigError(f'unknown builder settings {sorted(unknown)}')
    made = {s.name: s.make({k: _tuples(v) for k, v in builders.get(s.name, {}).items()})
            for s in BUILDERS}
    b = {**default_bindings(), **bindings}
    _check_names(b)
    train = Train(**b)
    algorithm = algorithms.get_algorithm(train.mode)
    given = {k: _tuples(v) for k, v in (settings or {}).items()}
    algorithm_settings = algorithm.make_settings(given)
    return cls(train=train, **made, algorithm_settings=algorithm_settings, **gin_texts)

  @classmethod
  def create(cls, *, data=None, critic=None, generator=None, distribution=None,
             augmentation=None, settings=None, **bindings) -> 'RunConfig':
    """The configuration of these train bindings, builder settings (`data`: build_ssl_data's,
    `critic`: build_critic's, `generator`: build_generator's, `distribution`:
    make_strategy's, `augmentation`) and algorithm settings (dicts), the rest at their
    defaults (no gin). Two settings have no default that trains: the training length
    (`steps=`, `epochs=` or `critic_updates=`) and, for an algorithm whose critic is
    constrained (ssl), its constraints (`settings={'constraints': [fisher.Fisher()]}`);
    a call without them is refused naming both, e.g.
    `RunConfig.create(steps=100, settings={'constraints': [fisher.Fisher()]})`."""
    missing, example = [], []
    if not {'steps', 'epochs', 'critic_updates'} & set(bindings):
      missing.append('a training length (steps=, epochs= or critic_updates=)')
      example.append('steps=100')
    algorithm = algorithms.get_algorithm(bindings.get('mode', Train.mode))
    if ('constraints' in _field_names(algorithm.Settings)
        and not algorithm.Settings.constraints and 'constraints' not in (settings or {})):
      missing.append("the critic's constraints (settings=, with fisher from "
                     'tf_ipmssl.objectives)')
      example.append("settings={'constraints': [fisher.Fisher()]}")
    if missing:
      raise errors.ConfigError(f'RunConfig.create needs {" and ".join(missing)}: e.g. '
                               f'RunConfig.create({", ".join(example)}, ...)')
    given = {'build_ssl_data': data, 'build_critic': critic, 'build_generator': generator,
             'make_strategy': distribution, 'augmentation': augmentation}
    return cls.from_bindings(bindings, {k: v for k, v in given.items() if v is not None},
                             settings)

  def replaced(self, changes: Mapping[str, Any]) -> 'RunConfig':
    """This configuration with settings changed, each by its gin name ({'train.steps': 100,
    'build_critic.width': 0.5, 'ssl.lambda_ce': 1.0}), validated again as a whole; a
    ConfigError names a setting that does not exist. A new train.mode takes its algorithm's
    default settings, and those of `changes`. The gin texts are not carried over (a run
    trained from it writes it as gin anew: api.train)."""
    groups = self.groups()
    settings = {group: set(values) for group, values in groups.items()}
    mode = changes.get('train.mode', self.mode)
    if mode != self.mode:
      groups[mode] = {}
      settings[mode] = set(_field_names(algorithms.get_algorithm(mode).Settings))
    for name, value in changes.items():
      group, _, field = name.partition('.')
      if field not in settings.get(group, ()):
        raise errors.ConfigError(f'{name} is not a setting of this configuration (its groups: '
                                 f'{", ".join(groups)}; e.g. train.steps)')
      groups[group][field] = value
    return RunConfig.from_bindings(
        groups['train'], {s.name: groups[s.name] for s in BUILDERS}, groups[mode])

  @property
  def mode(self) -> str:
    """The algorithm's name (train.mode)."""
    return self.train.mode

  @property
  def formulation(self) -> Optional[str]:
    """The critic's formulation (ssl.formulation: 'plain', 'kplus1', 'kplus1_entropy'); None
    for an algorithm that trains no fake direction v (supervised)."""
    return getattr(self.algorithm_settings, 'formulation', None)

  @functools.cached_property
  def algorithm(self) -> type:
    """The algorithms.Algorithm subclass train.mode names."""
    return algorithms.get_algorithm(self.train.mode)

  @functools.cached_property
  def constraints(self) -> Tuple[constraint_lib.Constraint, ...]:
    """The critic constraints the algorithm uses, as it uses them (`constraints(settings)`:
    ssl's with ssl.constraint_penalty_scale applied)."""
    return self.algorithm.constraints(self.algorithm_settings)

  @property
  def critic_rate(self) -> float:
    """The critic's learning rate, train.learning_rate_scale applied."""
    return self.train.critic_learning_rate * self.train.learning_rate_scale

  @property
  def generator_rate(self) -> float:
    """The generator's learning rate, train.learning_rate_scale applied."""
    return self.train.generator_learning_rate * self.train.learning_rate_scale

  @property
  def loss_scaling(self) -> bool:
    """Whether the losses are scaled (mixed_float16's LossScaleOptimizers)."""
    return self.train.mixed_precision == 'mixed_float16'

  @property
  def image_size(self) -> int:
    """The networks' input size (build_ssl_data.image_size, resolved)."""
    return self.build_ssl_data.image_size

  @property
  def augmentations(self) -> dict:
    """Each training stream's augmentation.Augmentation, by stream name (augmentation.STREAMS):
    the `augmentation` settings."""
    return augmentation_lib.per_stream(self.augmentation)

  @property
  def settings(self) -> dict:
    """The algorithm's settings by name (as bound: constraints unscaled)."""
    return builder_settings_lib.values_of(self.algorithm_settings)

  def groups(self) -> dict:
    """Every setting's value, grouped by gin name: 'train', the algorithm's name (its
    settings as bound) and each builder's, in that order."""
    groups = {'train': builder_settings_lib.values_of(self.train), self.mode: self.settings}
    groups.update({s.name: builder_settings_lib.values_of(getattr(self, s.name))
                   for s in BUILDERS})
    return groups

  def to_json(self) -> dict:
    """The configuration as JSON-ready values: run_config.json, one object per gin name
    (config_formats.py)."""
    out = {'format_version': config_formats.FORMAT_VERSION}
    out.update({name: {k: _jsonable(v) for k, v in sorted(values.items())}
                for name, values in self.groups().items()})
    return out

  @classmethod
  def from_json(cls, content, gin_text='', operative_gin_text='') -> 'RunConfig':
    """The configuration `content` (a run_config.json of any format version) was written
    from, validated as `from_bindings` does; the gin texts are kept as given (config.gin,
    operative_config.gin). A ConfigError names a constraint type or algorithm this
    process has not registered."""
    try:
      content = config_formats.upgrade(content)
    except config_formats.FormatError as e:
      raise errors.ConfigError(str(e)) from None
    bindings = content['train']
    algorithms.get_algorithm(bindings['mode'])  # A ConfigError for an unregistered one.
    groups = {name: {k: _from_jsonable(v) for k, v in content.get(name, {}).items()}
              for name in (bindings['mode'], *(s.name for s in BUILDERS))}
    return cls.from_bindings(
        {k: _from_jsonable(v) for k, v in bindings.items()},
        {s.name: groups[s.name] for s in BUILDERS}, groups[bindings['mode']],
        gin_text=gin_text, operative_gin_text=operative_gin_text)

  def differing_settings(self, other: 'RunConfig') -> list:
    """(gin name, this value, `other`'s value) of every setting in which `other` differs
    from this configuration (`train.seed`, `ssl.lambda_ce`, `build_critic.width`, ...; the
    values as run_config.json writes them)."""
    out = []
    # Group by group, in the same order on both sides (the algorithm's may differ in name).
    for (my_name, mine), (their_name, theirs) in zip(self.groups().items(),
                                                     other.groups().items()):
      mine = {f'{my_name}.{k}': v for k, v in mine.items()}
      theirs = {f'{their_name}.{k}': v for k, v in theirs.items()}
      for name in sorted(set(mine) | set(theirs), key=lambda n: (n not in mine, n)):
        if mine.get(name) != theirs.get(name):
          out.append((name, _jsonable(mine.get(name)), _jsonable(theirs.get(name))))
    return out


def _with_image_size(data):
  """The data settings `data` with image_size resolved (ssl_data_settings.image_size_of)."""
  return dataclasses.replace(
      data, image_size=ssl_data_settings.image_size_of(data.dataset, data.image_size))


_NON_FINITE = {repr(v): v for v in (math.inf, -math.inf, math.nan)}


def _tuples(value):
  """`value` with every list a tuple (a frozen configuration holds no list)."""
  if isinstance(value, (list, tuple)):
    return tuple(_tuples(v) for v in value)
  return value


def _from_jsonable(value):
  """The value `_jsonable` wrote: lists as tuples, non-finite floats as floats, a
  constraint's JSON object ({'type', 'name', fields}) as the constraint, made by the class
  registered as its type."""
  if isinstance(value, str) and value in _NON_FINITE:
    return _NON_FINITE[value]
  if isinstance(value, list):
    return tuple(_from_jsonable(v) for v in value)
  if isinstance(value, dict) and 'type' in value:
    return constraint_lib.get(value['type'])(**{k: _from_jsonable(v) for k, v in value.items()
                                                if k not in ('type', 'name')})
  return value


def _jsonable(value: Any):
  """Constraints by their type, name and fields; tuples as lists; non-finite floats as their
  repr."""
  if isinstance(value, constraint_lib.Constraint):
    return {'type': type(value).__name__, 'name': value.name,
            **{f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}}
  if isinstance(value, (tuple, list)):
    return [_jsonable(v) for v in value]
  if isinstance(value, float) and not math.isfinite(value):
    return repr(value)
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  return repr(value)
