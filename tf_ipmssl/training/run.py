"""One run's networks, optimizers, variables and checkpoints, built one way.

`Run.build(config, ...)` and `Run.from_model_dir(model_dir)` are the only constructors: bin/train,
evaluate, export, diagnose and the benchmark all get their critic, generator, multipliers and
optimizers here, and a run's configuration from its run_config.json (`run_config_of`; a
resume with another configuration is refused by `check_config`). What each checkpoint
directory holds:

- checkpoints/ (`manager`): everything that continues training — `critic` (the trained
  critic), `critic_optimizer`, `generator` and `generator_optimizer` (where the algorithm
  trains a generator), the counters `step`, `critic_iteration` (the critic updates done:
  RunState's `critic_updates`), `nonfinite`, `multipliers/lambda_<constraint>`, `best/` (best
  validation error, its test error, labeled-set error and step, and the validation and
  test confusion matrices there), `final/` (the same of the latest evaluation: metrics.json's `final`, so that a trainer killed between a checkpoint
  and its metrics.json loses no evaluation) and, with a weight average, `averaged_critic`;
- best/ (`best_manager`): `critic` = the *evaluated* critic of the best validation step
  (the weight average when the run keeps one, else the trained critic).
"""
import dataclasses
import os
from typing import Optional

import keras
import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import fault_injection
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.run_dir import checkpoint_integrity
from tf_ipmssl.run_dir import class_results
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import run_record
from tf_ipmssl.training import optimizers
from tf_ipmssl.training import precision
from tf_ipmssl.training import run_config as run_config_lib
from tf_ipmssl.training import weight_averaging

CHECKPOINTS = ('latest', 'best')
# The checkpoint a run reports and exports: best where it has one, latest where it has none
# (a run without a validation split). The default of bin/evaluate, bin/export and the API.
REPORTED = 'reported'


def reported_checkpoint(model_dir) -> str:
  """'best' where model_dir's best/ holds a checkpoint, else 'latest' (REPORTED)."""
  best = tf.train.latest_checkpoint(os.path.join(model_dir, run_files.BEST_CHECKPOINT_DIR))
  return 'best' if best else 'latest'
# The counters' names in training checkpoints (a file format), where RunState names them
# otherwise.
_CHECKPOINT_NAMES = {'critic_updates': 'critic_iteration'}
WEIGHTS = ('evaluated', 'trained')
# Bindings that may differ on resume: how a run is observed, how long it goes on, where
# the (same) data files are read from, and what its final line compares with.
_RESUMABLE_CHANGES = ('log_every', 'eval_every', 'checkpoint_every', 'sample_every',
                      'export_classifier', 'keep_checkpoints', 'steps', 'epochs',
                      'eval_batch_size', 'data_dir', 'baseline')


class RunState:
  """Every tf.Variable of a run besides the networks and optimizers (all checkpointed)."""

  def __init__(self, constraints, num_classes):
    def counter(name, dtype=tf.int64, value=0):
      return tf.Variable(value, dtype=dtype, trainable=False, name=name,
                         aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    # The steps done, the critic updates done, and the steps whose logged values were not
    # all finite.
    self.counters = {'step': counter('step'), 'critic_updates': counter('critic_updates'),
                     'nonfinite': counter('nonfinite')}
    self.multipliers = {c.name: counter(f'lambda_{c.name}', tf.float32, 0.0)
                        for c in constraints if c.has_multiplier}
    self.best = {'validation_error': counter('best_validation_error', tf.float32, np.inf),
                 'test_error': counter('best_test_error', tf.float32, np.nan),
                 'step': counter('best_step', tf.int64, -1),
                 # The error on the labeled training images at the best step (NaN where
                 # the checkpoint holds none: run_dir/config_formats.py).
                 'labeled_error': counter('best_labeled_error', tf.float32, np.nan)}
    # The latest evaluation (step -1: none yet; NaN: an error not computed there); `final/`
    # in training checkpoints.
    self.latest = {'step': counter('latest_step', tf.int64, -1),
                   'validation_error': counter('latest_validation_error', tf.float32, np.nan),
                   'test_error': counter('latest_test_error', tf.float32, np.nan),
                   'labeled_error': counter('latest_labeled_error', tf.float32, np.nan)}
    # The confusion matrices (class_results.py) of the validation and test splits at the
    # best and the latest evaluation; -1 everywhere where not computed (or where the
    # checkpoint holds none: run_dir/config_formats.py).
    for part, prefix in ((self.best, 'best'), (self.latest, 'latest')):
      for split in class_results.SPLITS:
        part[f'{split}_confusion'] = counter(f'{prefix}_{split}_confusion', tf.int64,
                                             np.full([num_classes, num_classes], -1))


def run_config_of(model_dir) -> run_config_lib.RunConfig:
  """The RunConfig of the run in model_dir, rebuilt from its run_config.json alone
  (config.gin and operative_config.gin are kept as text); gin is neither read nor changed.

  A ConfigError names the file and what it needs (e.g. a constraint type or algorithm this
  process has not registered: import the module that registers it).
  """
  content = run_files.read_json(model_dir, run_files.RUN_CONFIG_FILE)
  if content is None:
    if run_files.exists(os.path.join(model_dir, run_files.CONFIG_FILE)):
      raise errors.UserError(f'{model_dir} has no {run_files.RUN_CONFIG_FILE}: it was written '
                             'by a tf_ipmssl older than the run configuration, which this one '
                             'cannot rebuild; use that version, or train it again')
    raise errors.UserError(f'{model_dir} is not a tf_ipmssl run directory (no '
                           f'{run_files.RUN_CONFIG_FILE})')
  texts = []
  for name in (run_files.CONFIG_FILE, run_files.OPERATIVE_CONFIG_FILE):
    path = os.path.join(model_dir, name)
    texts.append(run_files.read_text(path) if run_files.exists(path) else '')
  try:
    return run_config_lib.RunConfig.from_json(content, *texts)
  except errors.ConfigError as e:
    raise errors.ConfigError(
        f'{os.path.join(model_dir, run_files.RUN_CONFIG_FILE)}: {e}') from None


def check_config(model_dir, config):
  """Refuses to resume a run started with another configuration (`config`, a RunConfig),
  naming the settings that differ from the run's run_config.json (those of
  _RESUMABLE_CHANGES may differ).

  Reads only: safe on a read-only model_dir.
  """
  differing = [(name, run, now) for name, run, now in
               run_config_of(model_dir).differing_settings(config)
               if name.rsplit('.', 1)[1] not in _RESUMABLE_CHANGES]
  if differing:
    listed = '; '.join(f'{name}: run {run!r}, now {now!r}' for name, run, now in differing)
    raise errors.ConfigError(
        f'{model_dir} holds a run started with a different configuration ({listed}; see '
        f'{os.path.join(model_dir, run_files.RUN_CONFIG_FILE)}); resume it with the same '
        '--gin_file/--gin_bindings, or use a new --model_dir')


@dataclasses.dataclass
class Run:
  """The networks, optimizers and variables of one run (see the module doc), and with a
  model_dir its checkpoint managers. The run's algorithm (algorithms.Algorithm, made as
  `config.algorithm(run, strategy)`) updates them in place."""
  config: run_config_lib.RunConfig
  critic: keras.Model
  generator: Optional[keras.Model]  # None where the algorithm trains no generator.
  averaged_critic: Optional[keras.Model]
  critic_optimizer: keras.optimizers.Optimizer
  generator_optimizer: Optional[keras.optimizers.Optimizer]
  state: RunState
  manager: Optional[tf.train.CheckpointManager] = None
  best_manager: Optional[tf.train.CheckpointManager] = None
  # A run read from its model_dir: its dataset.json (name, num_classes, image_shape, source).
  dataset: Optional[dict] = None

  @property
  def evaluated_critic(self):
    """The critic that is evaluated, selected on validation and exported."""
    return self.averaged_critic or self.critic

  @classmethod
  def build(cls, config, *, num_classes, image_shape, strategy=None,
            model_dir=None) -> 'Run':
    """The networks, optimizers and run state of `config` (a RunConfig).

    Variables are created under `strategy` (default: the current one) with the current
    global dtype policy; the networks' settings are the configuration's
    (`config.build_critic`, `config.build_generator`, and their input size
    `config.image_size`), whatever gin holds; `image_shape` gives them their channels. With a model_dir, the run gets its checkpoint
    managers (nothing is restored or written). An algorithm that trains no generator gets
    neither a generator nor its optimizer. The process's graphs are built from here on with
    the summation order fixed (precision.py: the same numbers in every process).
    """
    precision.fix_summation_order()
    strategy = strategy or tf.distribute.get_strategy()
    seed = config.train.seed
    build_critic = lambda: critic_lib.build_critic(  # pylint: disable=unnecessary-lambda-assignment
        config.build_critic, num_classes=num_classes, input_channels=image_shape[-1],
        image_size=config.image_size, seed=seed)
    train = config.train
    make_optimizer = lambda rate: optimizers.make_optimizer(  # pylint: disable=unnecessary-lambda-assignment
        train.optimizer, rate, train.adam_beta1, train.adam_beta2, train.adam_epsilon,
        train.adam_epsilon_placement)
    trains_generator = config.algorithm.trains_generator
    generator = generator_optimizer = None
    with strategy.scope():
      critic = build_critic()
      if trains_generator:
        generator = generator_lib.build_generator(
            config.build_generator, output_channels=image_shape[-1],
            image_size=config.image_size, seed=seed)
      averaged_critic = None
      if config.train.critic_ema_decay is not None:
        averaged_critic = build_critic()
        weight_averaging.copy_weights(weight_averaging.averaged_pairs(critic, averaged_critic))
      critic_optimizer = make_optimizer(config.critic_rate)
      if trains_generator:
        generator_optimizer = make_optimizer(config.generator_rate)
      if config.loss_scaling:
        critic_optimizer = keras.optimizers.LossScaleOptimizer(critic_optimizer)
        if trains_generator:
          generator_optimizer = keras.optimizers.LossScaleOptimizer(generator_optimizer)
      # Optimizer slots exist before the first traced step and before a restore.
      critic_optimizer.build(critic.trainable_variables)
      if trains_generator:
        generator_optimizer.build(generator.trainable_variables)
      state = RunState(config.constraints, num_classes)
    run = cls(config, critic, generator, averaged_critic, critic_optimizer, generator_optimizer,
              state)
    if model_dir is not None:
      run._add_checkpoint_managers(model_dir)
    return run

  @classmethod
  def from_model_dir(cls, model_dir) -> 'Run':
    """The run in model_dir, built from its run_config.json and dataset.json, with its
    checkpoint managers; nothing is restored yet (`restore`, `restore_critic`). The
    process's gin configuration is neither read nor changed (run_config_of).
    """
    config = run_config_of(model_dir)
    dataset = run_record.read_dataset(model_dir)
    run = cls.build(config, num_classes=dataset['num_classes'],
                    image_shape=dataset['image_shape'], model_dir=model_dir)
    run.dataset = dataset
    return run

  def _add_checkpoint_managers(self, model_dir):
    state = self.state
    optional = {'averaged_critic': self.averaged_critic, 'generator': self.generator,
                'generator_optimizer': self.generator_optimizer}
    # What a training checkpoint holds, by name.
    self.checkpointed = dict(
        critic=self.critic, critic_optimizer=self.critic_optimizer,
        **{_CHECKPOINT_NAMES.get(name, name): value for name, value in state.counters.items()},
        multipliers=tf.train.Checkpoint(**state.multipliers),
        best=tf.train.Checkpoint(**state.best), final=tf.train.Checkpoint(**state.latest),
        **{name: value for name, value in optional.items() if value is not None})
    checkpoint = tf.train.Checkpoint(**self.checkpointed)
    self.manager = tf.train.CheckpointManager(
        checkpoint, os.path.join(model_dir, run_files.CHECKPOINT_DIR),
        max_to_keep=self.config.train.keep_checkpoints)
    self.best_manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(critic=self.evaluated_critic),
        os.path.join(model_dir, run_files.BEST_CHECKPOINT_DIR), max_to_keep=1)
    fault_injection.watch_checkpoint_manager(self.manager)
    fault_injection.watch_checkpoint_manager(self.best_manager)

  def resolved_checkpoint(self, which):
    """`which`, with REPORTED resolved: 'best' where best/ holds a checkpoint, else
    'latest'."""
    if which != REPORTED:
      return which
    return 'best' if self.best_manager.latest_checkpoint else 'latest'

  def checkpoint_path(self, which='latest'):
    """The newest checkpoint of checkpoints/ ('latest') or best/ ('best'); REPORTED: of
    best/ where it holds one, else of checkpoints/."""
    which = self.resolved_checkpoint(which)
    errors.check_choice(which, CHECKPOINTS + (REPORTED,), 'checkpoint')
    manager = self.manager if which == 'latest' else self.best_manager
    if manager.latest_checkpoint is None:
      other = 'latest' if which == 'best' else 'best'
      other_there = (self.manager if other == 'latest' else self.best_manager).latest_checkpoint
      why = (' (a run without a validation split keeps none)' if which == 'best' else '')
      raise errors.UserError(
          f'no {which} checkpoint in {manager.directory}{why}; '
          + (f'use --checkpoint={other} (checkpoint={other!r}), or leave it out for the one '
             'the run reports' if other_there else 'train first (bin/train)'))
    return manager.latest_checkpoint

  def restore_to_train(self, path):
    """Restores a training checkpoint to go on training it, asserting that it holds every
    variable training depends on. What the run only observes may be missing from an older
    run directory's checkpoint (run_dir/config_formats.py): the latest evaluation (`final/`;
    loop.Loop then takes metrics.json's), the labeled-set error at the best step (then
    NaN) and the confusion matrices (then not computed)."""
    def required_of_best(part):
      return tf.train.Checkpoint(**{k: v for k, v in part.items()
                                    if k != 'labeled_error' and not k.endswith('_confusion')})
    required = dict(self.checkpointed, best=required_of_best(self.state.best))
    del required['final']
    status = tf.train.Checkpoint(**required).restore(path)
    status.assert_existing_objects_matched()
    status.expect_partial()  # What the run observes is left to `restore`, by design.
    self.restore(path)  # Also what the run observes, where the checkpoint has it.

  def restore(self, path):
    """Restores every variable a training checkpoint (of checkpoints/) holds."""
    self.manager.checkpoint.restore(path).expect_partial()

  def restore_critic(self, which='latest', weights='evaluated'):
    """A critic with the weights of the latest or best-on-validation checkpoint.

    weights: 'evaluated' (what the run evaluates, selects and exports) or 'trained' (the
    critic the optimizer updates; best/ keeps it only when the run has no weight average).
    Returns (critic, checkpoint path).
    """
    errors.check_choice(weights, WEIGHTS, 'weights')
    which = self.resolved_checkpoint(which)
    if weights == 'trained' and which == 'best' and self.averaged_critic is not None:
      raise errors.UserError('the trained (not averaged) critic is kept only in the latest '
                             'checkpoint of a run with train.critic_ema_decay; use '
                             '--checkpoint=latest')
    path = self.checkpoint_path(which)
    checkpoint_integrity.check_readable(path)
    if which == 'best':
      self.best_manager.checkpoint.restore(path).expect_partial()
      return self.evaluated_critic, path
    self.restore(path)
    return (self.critic if weights == 'trained' else self.evaluated_critic), path
