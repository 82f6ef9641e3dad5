"""A run's configuration: the whole run as one frozen, validated object.

gin is the user's interface; a program reads it once, at its boundary, into a RunConfig
that everything below receives explicitly (nothing below reads gin). `train_bindings` is the
gin configurable `train` (every `train.*` name of the gin files): calling it returns the
bound values, nothing else; the builders' settings (`build_ssl_data.*`, `build_critic.*`,
`build_generator.*`, `make_strategy.*`) are read the same way (gin_settings.py, registered
by tf_ipmssl/configurables.py).
`RunConfig.from_bindings` checks every train field (types, ranges, choices, the training
length, early stopping) and groups them:

- `objective`: the algorithm (train.mode), formulation, constraints (validated, with
  train.constraint_penalty_scale applied), λ_CE, generator loss, ramp-up, weight decay;
- `optimizers`: optimizer, learning rates (with train.learning_rate_scale applied) and their
  schedule, Adam's settings;
- `loop`: batch, n_c, length, the log/eval/checkpoint/sample periods, early stopping,
  evaluation batch, export, baseline;
- `numerics`: seed, XLA, mixed precision, op determinism, the critic's weight average;
- `data`, `critic`, `generator`, `distribution`: the builders' keyword arguments, every
  setting (the builders' defaults for those not bound).

`RunConfig.from_gin()` is the one way a program gets the configuration of the gin config
it parsed (bin/train, before it touches the model dir); `RunConfig.create(...)` makes one
without gin. `to_json()` is what the run records beside config.gin (run_config.json) and
`from_json(...)` rebuilds the configuration from it, validated again, without gin
(run.run_config_of: evaluate, export, diagnose, a resume's identity check).
run_config.json (format version 2, `FORMAT_VERSION`) holds:

- 'train': the train bindings as given (constraints as {'type': class name, 'name', and
  their fields}, unscaled), what `from_json` rebuilds the run from;
- 'bindings': the builders' settings, by gin name ('build_critic': {...}, ...), every one;
- 'objective', 'optimizers', 'loop', 'numerics': the grouped fields as used (scaled
  constraints, 'critic_rate' and 'generator_rate'), for readers (hparams.py, tables).

A file without 'format_version' is of version 1 (written before the version and 'train'
existed): it is rebuilt from its groups, where every train binding is a field (mode is
objective.algorithm, the constraints as bound objective.bound_constraints). Non-finite
floats are written as their repr ('inf', '-inf', 'nan') and tuples as lists.

The `train.*` bindings (gin names; defaults in `_train_bindings`):

  mode: 'ssl' (the IPM GAN, docs/algorithm.md#training-loop), 'supervised' (the
    critic CNN with CE only, paper Appendix C; bind build_ssl_data.num_labeled = None for
    all labels), or the name of another registered algorithm (algorithms.py).
  formulation: 'plain', 'kplus1' or 'kplus1_entropy' (docs/algorithm.md#formulations).
  constraints: e.g. [@Fisher(), @Sobolev()] (docs/algorithm.md#constraints, placement via
    `component`).
  lambda_ce: weight of the labeled cross-entropy (1.5 for K+1, 0.1 for plain).
  reference_pairwise_f: reproduce the released code's broadcast f
    (docs/algorithm.md#pairwise-f).
  batch_size: global batch of each of the labeled, unlabeled and generated batches.
  critic_iterations: n_c critic iterations per generator iteration.
  epochs: passes of the critic iterations over the unlabeled set (supervised: over the
    labeled set). `critic_updates` overrides it, and `steps` (generator iterations;
    supervised: updates) overrides both.
  critic_updates: the training length in critic updates (SSL: steps = critic_updates / n_c,
    rounded up; supervised: steps = critic_updates), so that cells with different n_c train
    on the same number of batches, as with `epochs`.
  learning_rate_scale: multiplies both learning rates (1 in the paper's cells; a short-budget
    preset keeps each cell's rates and their ratios, gin/presets/).
  constraint_penalty_scale: multiplies every augmented-Lagrangian penalty weight ρ (Fisher,
    Sobolev; not λ_GP or the clip value), keeping the ratios between them.
  adam_epsilon / adam_epsilon_placement: Adam's ε and where it is added:
    'bias_corrected' (PyTorch's Adam, the released code; the default) or 'keras'
    (keras.optimizers.Adam, ε on the uncorrected √v).
  learning_rate_halving_epochs: halve both learning rates every this many epochs.
  learning_rate_linear_decay_start: None (the paper), or a fraction in [0, 1) of the
    run's steps after which both learning rates fall linearly to 0 at the last step
    (learning_rate_schedule.py).
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
  generator_loss: 'ipm' (the paper: −E_Q f) or 'feature_matching' (an option:
    ‖E_P Φ − E_Q Φ‖², generator_objective.feature_matching_objective).
  ipm_rampup_updates: None (the paper), or T: the IPM term of the critic's loss is
    weighted by exp(−5 (1 − t/T)²) over the first T critic updates (ipm_rampup.py).
  baseline: None, or (runs.csv of a bin/sweep results table, baseline cell id[, recipe
    cell id]): the final line shows the baseline's run on the same labels and the cells'
    means beside this run's result (baseline.py).
  critic_ema_decay: None (the paper), or a decay in (0, 1): evaluate, select and export
    an exponential moving average of the critic's weights (weight_averaging.py).
"""
import dataclasses
import inspect
import math
from typing import Any, Mapping, Optional, Tuple

import gin

from tf_ipmssl import errors
from tf_ipmssl import gin_settings
from tf_ipmssl.data import ssl_data
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import constraint as constraint_lib
from tf_ipmssl.objectives import formulations
from tf_ipmssl.objectives import generator_objective
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import baseline as baseline_lib
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
FORMAT_VERSION = 2
# The builders' settings a run holds besides train's: (RunConfig field,
# builder_settings.Settings).
BUILDERS = (('data', ssl_data.SETTINGS), ('critic', critic_lib.SETTINGS),
            ('generator', generator_lib.SETTINGS), ('distribution', distribution_lib.SETTINGS))


def _train_bindings(mode='ssl',
                    formulation='kplus1',
                    constraints=gin.REQUIRED,
                    lambda_ce=1.5,
                    reference_pairwise_f=False,
                    batch_size=64,
                    critic_iterations=2,
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
                    ipm_rampup_updates=None,
                    generator_loss='ipm',
                    learning_rate_scale=1.0,
                    constraint_penalty_scale=1.0):
  """The `train.*` bindings as a dict (each is documented in the module doc)."""
  return dict(locals())


train_bindings = gin.configurable('train')(_train_bindings)


def default_bindings():
  """Every train binding at its default (constraints: none)."""
  return {name: (() if p.default is gin.REQUIRED else p.default)
          for name, p in inspect.signature(_train_bindings).parameters.items()}


@dataclasses.dataclass(frozen=True)
class ObjectiveConfig:
  algorithm: type  # The algorithms.Algorithm subclass train.mode names.
  formulation: str
  constraints: Tuple[constraint_lib.Constraint, ...]
  lambda_ce: float
  reference_pairwise_f: bool
  generator_loss: generator_objective.GeneratorLoss
  ipm_rampup_updates: Optional[int]
  weight_decay_phi_s: float
  weight_decay_v: float
  constraint_penalty_scale: float


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
  critic_iterations: int
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
    'learning_rate_scale': (False, False, 0.0), 'constraint_penalty_scale': (False, False, 0.0),
    'critic_learning_rate': (False, False, 0.0), 'generator_learning_rate': (False, False, 0.0),
    'lambda_ce': (False, False, 0.0), 'adam_beta1': (False, False, 0.0),
    'adam_beta2': (False, False, 0.0), 'adam_epsilon': (False, False, 0.0),
    'weight_decay_phi_s': (False, False, 0.0), 'weight_decay_v': (False, False, 0.0),
    'seed': (True, False, 0), 'eval_batch_size': (True, False, 1),
    'keep_checkpoints': (True, False, 1), 'learning_rate_halving_epochs': (False, True, 0.0),
    'learning_rate_linear_decay_start': (False, True, 0.0),
    'ipm_rampup_updates': (True, True, 1), 'early_stopping_patience': (True, True, 1),
    'early_stopping_min_steps': (True, False, 0), 'batch_size': (True, False, 1),
    'critic_iterations': (True, False, 1), 'log_every': (True, False, 1),
    'eval_every': (True, False, 1), 'checkpoint_every': (True, False, 1),
    'sample_every': (True, False, 1),
}


def _check(b):
  """ConfigErrors for train's bindings `b` (a dict of every binding)."""
  unknown = set(b) - set(default_bindings())
  if unknown:
    raise errors.ConfigError(f'unknown train binding(s) {sorted(unknown)}')
  formulations.check_formulation(b['formulation'])
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


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Every setting of a run, validated and grouped (see the module doc)."""
  objective: ObjectiveConfig
  optimizers: OptimizerConfig
  loop: LoopConfig
  numerics: NumericsConfig
  # The builders' keyword arguments (BUILDERS): build_ssl_data, build_critic,
  # build_generator (besides the sizes and seed the run gives them), make_strategy.
  data: Mapping[str, Any]
  critic: Mapping[str, Any]
  generator: Mapping[str, Any]
  distribution: Mapping[str, Any]
  # The train bindings it was made from (every name, defaults included).
  source: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
  # The gin configuration it was read from (config.gin) and its operative part ('' without
  # gin).
  gin_text: str = dataclasses.field(default='', repr=False, compare=False)
  operative_gin_text: str = dataclasses.field(default='', repr=False, compare=False)

  @classmethod
  def from_bindings(cls, bindings, builders=None, **gin_texts) -> 'RunConfig':
    """The configuration of train bindings `bindings` (missing ones at their defaults) and
    of the builders' settings `builders` ({'data': {...}, 'critic': ..., 'generator': ...,
    'distribution': ...}, each completed with its builder's defaults); a ConfigError naming
    the binding and the fix for any invalid field."""
    builders = builders or {}
    unknown = set(builders) - {field for field, _ in BUILDERS}
    if unknown:
      raise errors.ConfigError(f'unknown builder settings {sorted(unknown)}')
    settings = {field: s.complete({k: _tuples(v) for k, v in builders.get(field, {}).items()})
                for field, s in BUILDERS}
    b = {**default_bindings(), **bindings}
    _check(b)
    algorithm = algorithms.get_algorithm(b['mode'])
    generator_loss = generator_objective.get_generator_loss(b['generator_loss'])
    constraints = constraint_lib.scale_penalty_weights(
        algorithm.constraints(b['formulation'], b['constraints']),
        b['constraint_penalty_scale'])
    values = dict(b, algorithm=algorithm, generator_loss=generator_loss,
                  constraints=constraints,
                  baseline=None if b['baseline'] is None else tuple(b['baseline']))
    return cls(**{group: group_cls(**{f.name: values[f.name]
                                      for f in dataclasses.fields(group_cls)})
                  for group, group_cls in _GROUPS}, **settings, source=b, **gin_texts)

  @classmethod
  def create(cls, *, data=None, critic=None, generator=None, distribution=None,
             **bindings) -> 'RunConfig':
    """The configuration of these train bindings and builder settings (dicts), the rest at
    their defaults (no gin)."""
    given = {'data': data, 'critic': critic, 'generator': generator,
             'distribution': distribution}
    return cls.from_bindings(bindings, {k: v for k, v in given.items() if v is not None})

  @classmethod
  def from_gin(cls) -> 'RunConfig':
    """The configuration of the gin bindings parsed in this process: the programs'
    boundary (bin/train), after tf_ipmssl.configurables registered the gin names.

    Only collecting the bindings runs inside gin's calls (constructing the constraints);
    validation runs outside, so its errors reach the caller as raised.
    """
    bindings = train_bindings()
    builders = {field: dict(gin_settings.from_gin(s)) for field, s in BUILDERS}
    return cls.from_bindings(bindings, builders, gin_text=gin.config_str(),
                             operative_gin_text=gin.operative_config_str())

  @property
  def mode(self) -> str:
    return self.objective.algorithm.name

  def to_json(self) -> dict:
    """The configuration as JSON-ready values (run_config.json, see the module doc)."""
    out = {'format_version': FORMAT_VERSION}
    out.update({group: {f.name: _jsonable(getattr(getattr(self, group), f.name))
                        for f in dataclasses.fields(getattr(self, group))}
                for group, _ in _GROUPS})
    out['objective']['bound_constraints'] = _jsonable(self.source['constraints'])
    out['optimizers'].update(critic_rate=self.optimizers.critic_rate,
                             generator_rate=self.optimizers.generator_rate)
    out['bindings'] = {s.name: {k: _jsonable(v) for k, v in sorted(getattr(self, field).items())}
                       for field, s in BUILDERS}
    out['train'] = {k: _jsonable(v) for k, v in sorted(self.source.items())}
    return out

  @classmethod
  def from_json(cls, record, gin_text='', operative_gin_text='') -> 'RunConfig':
    """The configuration `record` (a run_config.json of any format version) was written
    from, validated as `from_bindings` does; the gin texts are kept as given (config.gin,
    operative_config.gin). A ConfigError names a constraint type or algorithm this
    process has not registered."""
    version = record.get('format_version', 1)
    if version not in (1, FORMAT_VERSION):
      raise errors.ConfigError(f'run_config.json of format version {version!r}: this '
                               f'tf_ipmssl reads versions 1 and {FORMAT_VERSION}; use the '
                               'tf_ipmssl that wrote it')
    builders = {field: {k: _from_jsonable(v)
                        for k, v in record.get('bindings', {}).get(s.name, {}).items()}
                for field, s in BUILDERS}
    if version == 1:
      names = set(default_bindings()) - {'constraints'}
      bindings = {name: value for group, _ in _GROUPS for name, value in record[group].items()
                  if name in names}
      bindings.update(mode=record['objective']['algorithm'],
                      constraints=record['objective'].get('bound_constraints', []))
    else:
      bindings = record['train']
    bindings = {k: (_constraints_from_json(v) if k == 'constraints' else _from_jsonable(v))
                for k, v in bindings.items()}
    return cls.from_bindings(bindings, builders, gin_text=gin_text,
                             operative_gin_text=operative_gin_text)

  def differing_settings(self, other: 'RunConfig') -> list:
    """(gin name, this value, `other`'s value) of every setting in which `other` differs
    from this configuration (`train.lambda_ce`, `build_critic.width`, ...; the values as
    run_config.json writes them)."""
    out = []
    for group, group_cls in _GROUPS:
      for f in dataclasses.fields(group_cls):
        mine, theirs = getattr(getattr(self, group), f.name), getattr(getattr(other, group),
                                                                     f.name)
        if mine != theirs:
          name = 'mode' if f.name == 'algorithm' else f.name
          out.append((f'train.{name}', _jsonable(mine), _jsonable(theirs)))
    for field, s in BUILDERS:
      mine, theirs = getattr(self, field), getattr(other, field)
      for name in sorted(set(mine) | set(theirs)):
        if mine.get(name) != theirs.get(name):
          out.append((f'{s.name}.{name}', _jsonable(mine.get(name)),
                      _jsonable(theirs.get(name))))
    return out


_NON_FINITE = {repr(v): v for v in (math.inf, -math.inf, math.nan)}


def _tuples(value):
  """`value` with every list a tuple (a frozen configuration holds no list)."""
  if isinstance(value, (list, tuple)):
    return tuple(_tuples(v) for v in value)
  return value


def _from_jsonable(value):
  """The value `_jsonable` wrote: lists as tuples, non-finite floats as floats."""
  if isinstance(value, str) and value in _NON_FINITE:
    return _NON_FINITE[value]
  if isinstance(value, list):
    return tuple(_from_jsonable(v) for v in value)
  return value


def _constraints_from_json(records):
  """The constraints of `_jsonable` records ({'type', 'name', fields}), each made by the
  class registered as its type."""
  return tuple(constraint_lib.get(r['type'])(**{k: _from_jsonable(v) for k, v in r.items()
                                                if k not in ('type', 'name')})
               for r in records)


def _jsonable(value: Any):
  """Algorithms, losses and constraints by their names and fields; tuples as lists."""
  if isinstance(value, type) and issubclass(value, algorithms.Algorithm):
    return value.name
  if isinstance(value, generator_objective.GeneratorLoss):
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
