"""A run's configuration: the whole run as one frozen, validated object.

gin is the user's interface; a program reads it once, at its boundary, into a RunConfig
that everything below receives explicitly (nothing below reads gin). `train_bindings` is the
gin configurable `train` (every `train.*` name of the gin files): calling it returns the
bound values, nothing else; the algorithm's own settings (`ssl.*`: algorithms.py) and the
builders' settings (`build_ssl_data.*`, `build_critic.*`, `build_generator.*`,
`make_strategy.*`) are read the same way (gin_settings.py, registered by
tf_ipmssl/configurables.py).
`RunConfig.from_bindings` checks every train field (types, ranges, choices, the training
length, early stopping), has the algorithm check its settings, and groups them:

- `objective`: the algorithm (train.mode), its settings (algorithms.Algorithm.Settings),
  the critic constraints it uses (its `constraints(settings)`: for ssl validated, with
  ssl.constraint_penalty_scale applied), the weight decays;
- `optimizers`: optimizer, learning rates (with train.learning_rate_scale applied) and their
  schedule, Adam's settings;
- `loop`: batch, length, the log/eval/checkpoint/sample periods, early stopping,
  evaluation batch, export, baseline;
- `numerics`: seed, XLA, mixed precision, op determinism, the critic's weight average;
- `data`, `critic`, `generator`, `distribution`: the builders' keyword arguments, every
  setting (the builders' defaults for those not bound). `data.image_size` is held resolved
  (ssl_data.image_size_of: the dataset's own size where it is not bound, 32 or STL-10's 96) and
  validated; it is the one image size of the run (`RunConfig.image_size`), which Run.build
  gives both networks (it is not a setting of build_critic or build_generator);
- `augmentation`: the training streams' augmentation (`augmentation.*`, data/augmentation.py;
  off by default), validated for the algorithm's streams and the image size;
  `RunConfig.augmentations` is it per stream.

`RunConfig.from_gin()` is the one way a program gets the configuration of the gin config
it parsed (bin/train, before it touches the model dir); `RunConfig.create(...)` makes one
without gin. `to_json()` is what the run records beside config.gin (run_config.json) and
`from_json(...)` rebuilds the configuration from it, validated again, without gin
(run.run_config_of: evaluate, export, diagnose, a resume's identity check).
run_config.json (format version 3, `FORMAT_VERSION`) holds:

- 'train': the train bindings as given, what `from_json` rebuilds the run from;
- 'bindings': the algorithm's settings as given, under its name ('ssl': {...}; constraints
  as {'type': class name, 'name', and their fields}, unscaled), and the builders' settings,
  by gin name ('build_critic': {...}, ...), every one;
- 'objective', 'optimizers', 'loop', 'numerics': the grouped fields as used (the scaled
  constraints, 'critic_rate' and 'generator_rate'), for readers (tensorboard.py, tables).

A record written before the image size was bound in build_ssl_data holds none there (the run
is at its dataset's own size, 32) and may hold `build_critic.image_size` (then always 32,
the data's), which `from_json` drops (`LEGACY_BUILDER_SETTINGS`).

Versions 1 and 2 held the semi-supervised settings among the train bindings
(`LEGACY_TRAIN_SETTINGS`); `from_json` maps those onto the settings of the run's algorithm
(those it has; a supervised run had them unused). Version 2 wrote 'train' (every train
binding) and the builders' 'bindings'. A file without 'format_version' is of version 1
(written before the version and 'train' existed): it is rebuilt from its groups, where every
train binding is a field (mode is objective.algorithm, the constraints as bound
objective.bound_constraints). Non-finite floats are written as their repr ('inf', '-inf',
'nan') and tuples as lists.

The `train.*` bindings (gin names; defaults in `_train_bindings`):

  mode: 'ssl' (the IPM GAN, docs/algorithm.md#training-loop; its settings are `ssl.*`,
    semi_supervised.py), 'supervised' (the critic CNN with CE only, paper Appendix C; bind
    build_ssl_data.num_labeled = None for all labels), or the name of another registered
    algorithm (algorithms.py).
  batch_size: global batch of each of the labeled, unlabeled and generated batches.
  epochs: passes of the critic iterations over the unlabeled set (supervised: over the
    labeled set). `critic_updates` overrides it, and `steps` (generator iterations;
    supervised: updates) overrides both.
  critic_updates: the training length in critic updates (SSL: steps = critic_updates / n_c,
    rounded up; supervised: steps = critic_updates), so that cells with different n_c train
    on the same number of batches, as with `epochs`.
  critic_learning_rate / generator_learning_rate: the optimizers' learning rates (the
    generator's where the algorithm trains one).
  weight_decay_phi_s / weight_decay_v: the coupled weight decay of the critic's body and
    classifier head (Φ, S) and of its fake-logit vector V (where the algorithm trains V).
  learning_rate_scale: multiplies both learning rates (1 in the paper's cells; a short-budget
    preset keeps each cell's rates and their ratios, gin/presets/).
  adam_epsilon / adam_epsilon_placement: Adam's ε and where it is added:
    'bias_corrected' (PyTorch's Adam, the released code; the default) or 'keras'
    (keras.optimizers.Adam, ε on the uncorrected √v).
  learning_rate_halving_epochs: halve both learning rates every this many epochs.
  learning_rate_linear_decay_start: None (the paper), or a fraction in [0, 1) of the
    run's steps after which both learning rates fall linearly to 0 at the last step
    (optimizers.py).
  seed: init, shuffling, noise and dropout seed (the label split has its own,
    build_ssl_data.split_seed).
  log_every / eval_every / checkpoint_every / sample_every: in steps.
  jit_compile: XLA-compile each replica's forward/backward computation (its random draws
    differ from a run without XLA: see random_streams).
  mixed_precision: None, 'mixed_bfloat16' or 'mixed_float16' (GPU; with loss scaling).
    Losses, Ω's and λ's stay float32.
  deterministic_ops: tf.config.experimental.enable_op_determinism() (bit-exact resume).
  export_classifier: write the SavedModel classifier to model_dir/export at the end.
  early_stopping_patience: None (train all the steps), or stop once the validation
    error has not improved for this many steps (checked at evaluations; needs a validation
    split), but not before `early_stopping_min_steps`. `steps`/`epochs` is then the maximum.
  baseline: None, or (runs.csv of a bin/sweep results table, baseline cell id[, recipe
    cell id]): the final line shows the baseline's run on the same labels and the cells'
    means beside this run's result (baseline.py).
  critic_ema_decay: None (the paper), or a decay in (0, 1): evaluate, select and export
    an exponential moving average of the critic's weights (weight_averaging.py).
"""
import dataclasses
import difflib
import inspect
import math
from typing import Any, Optional, Tuple

import gin

from tf_ipmssl import builder_settings as builder_settings_lib
from tf_ipmssl import errors
from tf_ipmssl import gin_settings
from tf_ipmssl.data import augmentation as augmentation_lib
from tf_ipmssl.data import ssl_data
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import constraint as constraint_lib
from tf_ipmssl.run_dir import baseline as baseline_lib
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import distribution as distribution_lib
from tf_ipmssl.training import optimizers as optimizers_lib
# The library's algorithms and constraints, registered on import.
# pylint: disable=unused-import,g-bad-import-order
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev
from tf_ipmssl.objectives import weight_clipping
from tf_ipmssl.training import semi_supervised
from tf_ipmssl.training import supervised
# pylint: enable=unused-import,g-bad-import-order

MIXED_PRECISION_POLICIES = (None, 'mixed_bfloat16', 'mixed_float16')
# The layout of run_config.json that to_json writes (see the module doc).
FORMAT_VERSION = 3
# The train bindings of versions 1 and 2 that are now the semi-supervised algorithm's
# settings (semi_supervised.SemiSupervised.Settings): a binding `train.<name>` is refused
# with the algorithm's name for it, and an old record's are mapped onto its settings.
LEGACY_TRAIN_SETTINGS = ('formulation', 'constraints', 'lambda_ce', 'reference_pairwise_f',
                         'critic_iterations', 'generator_loss', 'ipm_rampup_updates',
                         'constraint_penalty_scale')
# Builder settings an older run_config.json may record that are no longer settings (the
# critic's input size is now the data's, build_ssl_data.image_size): dropped on reading.
LEGACY_BUILDER_SETTINGS = {'build_critic': ('image_size',)}
# The builders' settings a run holds besides train's: (RunConfig field,
# builder_settings.Settings).
BUILDERS = (('data', ssl_data.SETTINGS), ('critic', critic_lib.SETTINGS),
            ('generator', generator_lib.SETTINGS), ('distribution', distribution_lib.SETTINGS),
            ('augmentation', augmentation_lib.SETTINGS))


def _train_bindings(mode='ssl',
                    batch_size=64,
                    epochs=None,
                    steps=None,
                    critic_updates=None,
                    optimizer='adam',
                    critic_learning_rate=2e-4,
                    generator_learning_rate=2e-4,
                    adam_beta1=0.5,
                    adam_beta2=0.999,
                    adam_epsilon=1e-8,
                    adam_epsilon_placement='bias_corrected',
                    learning_rate_halving_epochs=None,
                    learning_rate_linear_decay_start=None,
                    weight_decay_phi_s=1e-6,
                    weight_decay_v=1e-3,
                    seed=0,
                    log_every=50,
                    eval_every=1000,
                    checkpoint_every=500,
                    sample_every=1000,
                    keep_checkpoints=2,
                    eval_batch_size=256,
                    jit_compile=False,
                    mixed_precision=None,
                    deterministic_ops=False,
                    export_classifier=True,
                    critic_ema_decay=None,
                    early_stopping_patience=None,
                    early_stopping_min_steps=0,
                    baseline=None,
                    learning_rate_scale=1.0,
                    **moved):
  """The `train.*` bindings as a dict (each is documented in the module doc); `moved`:
  bindings of other names, which `_check` refuses (an algorithm's setting bound at its old
  place gets the name it has now)."""
  bindings = dict(locals())
  del bindings['moved']
  return dict(bindings, **moved)


train_bindings = gin.configurable('train')(_train_bindings)


def default_bindings():
  """Every train binding at its default."""
  return {name: p.default for name, p in inspect.signature(_train_bindings).parameters.items()
          if p.kind is not inspect.Parameter.VAR_KEYWORD}


@dataclasses.dataclass(frozen=True)
class ObjectiveConfig:
  algorithm: type  # The algorithms.Algorithm subclass train.mode names.
  settings: Any  # Its Settings, validated.
  constraints: Tuple[constraint_lib.Constraint, ...]  # algorithm.constraints(settings).
  weight_decay_phi_s: float
  weight_decay_v: float


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
  optimizer: str
  critic_learning_rate: float  # As bound; `critic_rate` is the one used.
  generator_learning_rate: float
  learning_rate_scale: float
  adam_beta1: float
  adam_beta2: float
  adam_epsilon: float
  adam_epsilon_placement: str
  learning_rate_halving_epochs: Optional[float]
  learning_rate_linear_decay_start: Optional[float]

  @property
  def critic_rate(self) -> float:
    return self.critic_learning_rate * self.learning_rate_scale

  @property
  def generator_rate(self) -> float:
    return self.generator_learning_rate * self.learning_rate_scale


@dataclasses.dataclass(frozen=True)
class LoopConfig:
  batch_size: int
  epochs: Optional[float]
  steps: Optional[int]
  critic_updates: Optional[int]
  log_every: int
  eval_every: int
  checkpoint_every: int
  sample_every: int
  keep_checkpoints: int
  eval_batch_size: int
  early_stopping_patience: Optional[int]
  early_stopping_min_steps: int
  export_classifier: bool
  baseline: Optional[Tuple[str, ...]]


@dataclasses.dataclass(frozen=True)
class NumericsConfig:
  seed: int
  jit_compile: bool
  mixed_precision: Optional[str]
  deterministic_ops: bool
  critic_ema_decay: Optional[float]  # The evaluated critic's weight average, if any.

  @property
  def loss_scaling(self) -> bool:
    """Whether the losses are scaled (mixed_float16's LossScaleOptimizers)."""
    return self.mixed_precision == 'mixed_float16'


_GROUPS = (('objective', ObjectiveConfig), ('optimizers', OptimizerConfig),
           ('loop', LoopConfig), ('numerics', NumericsConfig))

# (integer, optional, lowest value) of the numeric bindings.
_NUMBERS = {
    'steps': (True, True, 1), 'epochs': (False, True, 0.0), 'critic_updates': (True, True, 1),
    'learning_rate_scale': (False, False, 0.0),
    'critic_learning_rate': (False, False, 0.0), 'generator_learning_rate': (False, False, 0.0),
    'adam_beta1': (False, False, 0.0),
    'adam_beta2': (False, False, 0.0), 'adam_epsilon': (False, False, 0.0),
    'weight_decay_phi_s': (False, False, 0.0), 'weight_decay_v': (False, False, 0.0),
    'seed': (True, False, 0), 'eval_batch_size': (True, False, 1),
    'keep_checkpoints': (True, False, 1), 'learning_rate_halving_epochs': (False, True, 0.0),
    'learning_rate_linear_decay_start': (False, True, 0.0),
    'early_stopping_patience': (True, True, 1),
    'early_stopping_min_steps': (True, False, 0), 'batch_size': (True, False, 1),
    'log_every': (True, False, 1),
    'eval_every': (True, False, 1), 'checkpoint_every': (True, False, 1),
    'sample_every': (True, False, 1),
}


def _check(b):
  """ConfigErrors for train's bindings `b` (a dict of every binding)."""
  unknown = set(b) - set(default_bindings())
  moved = [name for name in LEGACY_TRAIN_SETTINGS if name in unknown]
  if moved:
    raise errors.ConfigError('; '.join(_moved_message(name) for name in moved))
  if unknown:
    guesses = {g for name in unknown for g in difflib.get_close_matches(name, default_bindings())}
    raise errors.ConfigError(
        f'unknown train binding(s) {sorted(unknown)}' +
        (f' (did you mean {" or ".join(f"train.{g}" for g in sorted(guesses))}?)'
         if guesses else '') + '; the train settings are documented in '
        'tf_ipmssl/training/run_config.py')
  if b['epochs'] is None and b['steps'] is None and b['critic_updates'] is None:
    raise errors.ConfigError('set the training length: train.epochs, train.critic_updates '
                             'or train.steps')
  for name, (integer, optional, lowest) in _NUMBERS.items():
    errors.check_number(f'train.{name}', b[name], integer=integer, low=lowest,
                        optional=optional)
  if b['mixed_precision'] not in MIXED_PRECISION_POLICIES:
    raise errors.ConfigError(f'train.mixed_precision = {b["mixed_precision"]!r} is not one '
                             f'of {list(MIXED_PRECISION_POLICIES)}')
  optimizers_lib.check_optimizer(b['optimizer'], b['adam_epsilon_placement'])
  baseline_lib.check_spec(b['baseline'])
  decay_start = b['learning_rate_linear_decay_start']
  if decay_start is not None and not decay_start < 1.0:
    raise errors.ConfigError('train.learning_rate_linear_decay_start is a fraction of the '
                             f'run in [0, 1), got {decay_start!r}')
  ema = b['critic_ema_decay']
  if ema is not None and not (isinstance(ema, float) and 0.0 < ema < 1.0):
    raise errors.ConfigError(f'train.critic_ema_decay must be None or a float in (0, 1), got '
                             f'{ema!r}')


def _moved_message(name):
  """How to bind `train.<name>`, a setting that moved to the algorithms having it."""
  owners = [algorithm for algorithm in algorithms.registered_names()
            if name in _field_names(algorithms.get_algorithm(algorithm).Settings)]
  new = ' or '.join(f'{owner}.{name}' for owner in owners) or f'<algorithm>.{name}'
  return (f'train.{name} is now a setting of the algorithm: bind {new} instead (e.g. '
          f'`{new.split(" or ")[0]} = ...` in place of `train.{name} = ...`)')


def _field_names(dataclass) -> tuple:
  return tuple(f.name for f in dataclasses.fields(dataclass))


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Every setting of a run, validated and grouped (see the module doc)."""
  objective: ObjectiveConfig
  optimizers: OptimizerConfig
  loop: LoopConfig
  numerics: NumericsConfig
  # The builders' settings (BUILDERS), each a frozen dataclass of its builder's
  # (builder_settings.Settings.values_type; `.kwargs()` are the keyword arguments):
  # build_ssl_data, build_critic, build_generator (besides the sizes and seed the run gives
  # them), make_strategy, augmentation (a record without it: off).
  data: Any
  critic: Any
  generator: Any
  distribution: Any
  augmentation: Any
  # The train bindings it was made from (every name, defaults included).
  train_bindings: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
  # The gin configuration it was read from (config.gin) and its operative part ('' without
  # gin).
  gin_text: str = dataclasses.field(default='', repr=False, compare=False)
  operative_gin_text: str = dataclasses.field(default='', repr=False, compare=False)

  @classmethod
  def from_bindings(cls, bindings, builders=None, settings=None,
                    **gin_texts) -> 'RunConfig':
    """The configuration of train bindings `bindings` (missing ones at their defaults), of
    the builders' settings `builders` ({'data': {...}, 'critic': ..., 'generator': ...,
    'distribution': ..., 'augmentation': ...}, each completed with its defaults) and of the
    algorithm's settings `settings` (a dict; its defaults for the rest); a ConfigError
    naming the binding and the fix for any invalid field."""
    builders = builders or {}
    unknown = set(builders) - {field for field, _ in BUILDERS}
    if unknown:
      raise errors.ConfigError(f'unknown builder settings {sorted(unknown)}')
    builder_settings = {field: s.make({k: _tuples(v)
                                       for k, v in builders.get(field, {}).items()})
                        for field, s in BUILDERS}
    builder_settings['data'] = _with_image_size(builder_settings['data'])
    b = {**default_bindings(), **bindings}
    _check(b)
    algorithm = algorithms.get_algorithm(b['mode'])
    given = {k: _tuples(v) for k, v in (settings or {}).items()}
    algorithm_settings = algorithm.make_settings(given)
    augmentation_lib.check(
        augmentation_lib.per_stream(**builder_settings['augmentation'].kwargs()),
        builder_settings['data'].image_size, algorithm.reads)
    values = dict(b, algorithm=algorithm, settings=algorithm_settings,
                  constraints=algorithm.constraints(algorithm_settings),
                  baseline=None if b['baseline'] is None else tuple(b['baseline']))
    return cls(**{group: group_cls(**{f.name: values[f.name]
                                      for f in dataclasses.fields(group_cls)})
                  for group, group_cls in _GROUPS}, **builder_settings, train_bindings=b,
               **gin_texts)

  @classmethod
  def create(cls, *, data=None, critic=None, generator=None, distribution=None,
             augmentation=None, settings=None, **bindings) -> 'RunConfig':
    """The configuration of these train bindings, builder settings and algorithm settings
    (dicts), the rest at their defaults (no gin)."""
    given = {'data': data, 'critic': critic, 'generator': generator,
             'distribution': distribution, 'augmentation': augmentation}
    return cls.from_bindings(bindings, {k: v for k, v in given.items() if v is not None},
                             settings)

  @classmethod
  def from_gin(cls) -> 'RunConfig':
    """The configuration of the gin bindings parsed in this process: the programs'
    boundary (bin/train), after tf_ipmssl.configurables registered the gin names.

    Only collecting the bindings runs inside gin's calls (constructing the constraints);
    validation runs outside, so its errors reach the caller as raised.
    """
    bindings = train_bindings()
    builders = {field: dict(gin_settings.from_gin(s)) for field, s in BUILDERS}
    algorithm = algorithms.get_algorithm(bindings.get('mode', default_bindings()['mode']))
    settings = dict(gin_settings.from_gin(algorithm.settings_spec()))
    return cls.from_bindings(bindings, builders, settings, gin_text=gin.config_str(),
                             operative_gin_text=gin.operative_config_str())

  @property
  def mode(self) -> str:
    return self.objective.algorithm.name

  @property
  def image_size(self) -> int:
    """The networks' input size (build_ssl_data.image_size, resolved)."""
    return self.data.image_size

  @property
  def augmentations(self) -> dict:
    """Each training stream's augmentation.Augmentation, by stream name (augmentation.STREAMS):
    the `augmentation` settings."""
    return augmentation_lib.per_stream(**self.augmentation.kwargs())

  @property
  def settings(self) -> dict:
    """The algorithm's settings by name (as bound: constraints unscaled)."""
    return builder_settings_lib.values_of(self.objective.settings)

  def to_json(self) -> dict:
    """The configuration as JSON-ready values (run_config.json, see the module doc)."""
    out = {'format_version': FORMAT_VERSION}
    out.update({group: {f.name: _jsonable(getattr(getattr(self, group), f.name))
                        for f in dataclasses.fields(getattr(self, group))
                        if f.name != 'settings'}
                for group, _ in _GROUPS})
    out['optimizers'].update(critic_rate=self.optimizers.critic_rate,
                             generator_rate=self.optimizers.generator_rate)
    out['bindings'] = {s.name: {k: _jsonable(v)
                                for k, v in sorted(getattr(self, field).kwargs().items())}
                       for field, s in BUILDERS}
    out['bindings'][self.mode] = {k: _jsonable(v) for k, v in self.settings.items()}
    out['train'] = {k: _jsonable(v) for k, v in sorted(self.train_bindings.items())}
    return out

  @classmethod
  def from_json(cls, record, gin_text='', operative_gin_text='') -> 'RunConfig':
    """The configuration `record` (a run_config.json of any format version) was written
    from, validated as `from_bindings` does; the gin texts are kept as given (config.gin,
    operative_config.gin). A ConfigError names a constraint type or algorithm this
    process has not registered."""
    bindings, settings = _bindings_of_record(record)
    algorithms.get_algorithm(bindings['mode'])  # A ConfigError for an unregistered one.
    builders = {field: {k: _from_jsonable(v)
                        for k, v in record.get('bindings', {}).get(s.name, {}).items()
                        if k not in LEGACY_BUILDER_SETTINGS.get(s.name, ())}
                for field, s in BUILDERS}
    return cls.from_bindings({k: _from_jsonable(v) for k, v in bindings.items()}, builders,
                             {k: _from_jsonable(v) for k, v in settings.items()},
                             gin_text=gin_text, operative_gin_text=operative_gin_text)

  def differing_settings(self, other: 'RunConfig') -> list:
    """(gin name, this value, `other`'s value) of every setting in which `other` differs
    from this configuration (`train.seed`, `ssl.lambda_ce`, `build_critic.width`, ...; the
    values as run_config.json writes them)."""
    out = []
    for group, group_cls in _GROUPS:
      for f in dataclasses.fields(group_cls):
        if f.name in ('settings', 'constraints'):  # Compared as the algorithm's settings.
          continue
        mine, theirs = getattr(getattr(self, group), f.name), getattr(getattr(other, group),
                                                                     f.name)
        if mine != theirs:
          name = 'mode' if f.name == 'algorithm' else f.name
          out.append((f'train.{name}', _jsonable(mine), _jsonable(theirs)))
    named = [(self.mode, self.settings, other.mode, other.settings)]
    named += [(s.name, getattr(self, field).kwargs(), s.name, getattr(other, field).kwargs())
              for field, s in BUILDERS]
    for my_name, mine, their_name, theirs in named:
      mine = {f'{my_name}.{k}': v for k, v in mine.items()}
      theirs = {f'{their_name}.{k}': v for k, v in theirs.items()}
      for name in sorted(set(mine) | set(theirs), key=lambda n: (n not in mine, n)):
        if mine.get(name) != theirs.get(name):
          out.append((name, _jsonable(mine.get(name)), _jsonable(theirs.get(name))))
    return out


def _with_image_size(data):
  """The data settings `data` with image_size resolved (ssl_data.image_size_of)."""
  return dataclasses.replace(data, image_size=ssl_data.image_size_of(data.dataset,
                                                                     data.image_size))


def _bindings_of_record(record):
  """(train bindings, the algorithm's settings as bound), JSON values, of a run_config.json
  of any format version (see the module doc)."""
  version = record.get('format_version', 1)
  if version not in (1, 2, FORMAT_VERSION):
    raise errors.ConfigError(f'run_config.json of format version {version!r}: this '
                             f'tf_ipmssl reads versions 1 to {FORMAT_VERSION}; use the '
                             'tf_ipmssl that wrote it')
  if version == FORMAT_VERSION:
    bindings = dict(record['train'])
    return bindings, dict(record['bindings'].get(bindings['mode'], {}))
  if version == 1:
    names = (set(default_bindings()) | set(LEGACY_TRAIN_SETTINGS)) - {'constraints'}
    bindings = {name: value for group, _ in _GROUPS for name, value in record[group].items()
                if name in names}
    bindings.update(mode=record['objective']['algorithm'])
    if 'bound_constraints' in record['objective']:
      bindings['constraints'] = record['objective']['bound_constraints']
  else:
    bindings = dict(record['train'])
  legacy = {name: bindings.pop(name) for name in LEGACY_TRAIN_SETTINGS if name in bindings}
  mode = bindings['mode']
  kept = (_field_names(algorithms.get_algorithm(mode).Settings)
          if mode in algorithms.registered_names() else ())
  return bindings, {name: value for name, value in legacy.items() if name in kept}


def algorithm_settings_of(record) -> dict:
  """The algorithm's settings of a run_config.json of any format version as bound (JSON
  values), by gin name (`ssl.lambda_ce`); an old record's of an algorithm this process has
  not registered are not known (none)."""
  bindings, settings = _bindings_of_record(record)
  return {f'{bindings["mode"]}.{name}': value for name, value in settings.items()}


_NON_FINITE = {repr(v): v for v in (math.inf, -math.inf, math.nan)}


def _tuples(value):
  """`value` with every list a tuple (a frozen configuration holds no list)."""
  if isinstance(value, (list, tuple)):
    return tuple(_tuples(v) for v in value)
  return value


def _from_jsonable(value):
  """The value `_jsonable` wrote: lists as tuples, non-finite floats as floats, a
  constraint's record ({'type', 'name', fields}) as the constraint, made by the class
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
  """Algorithms, losses and constraints by their names and fields; tuples as lists."""
  if isinstance(value, type) and issubclass(value, algorithms.Algorithm):
    return value.name
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
