"""The training run: data, networks, optimizers, checkpoints, evaluation, logging, export.

`train(model_dir)` is the gin-configurable entry point behind `bin/train`. Re-running it on
an existing model_dir resumes from the latest checkpoint: the data streams and all noise are
pure functions of (seed, iteration counter), the dropout RNG state is checkpointed with the
critic, so a resumed run ends with the weights of an uninterrupted one.
"""
import dataclasses
import math
import os
import time
from typing import Optional

from absl import logging
import gin
import keras
import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import run_files
from tf_ipmssl.data import pipelines
from tf_ipmssl.data import ssl_data
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import constraint as constraint_lib
from tf_ipmssl.objectives import formulations
from tf_ipmssl.objectives import ipm_rampup
from tf_ipmssl.training import baseline as baseline_lib
from tf_ipmssl.training import checkpoint_integrity
from tf_ipmssl.training import distribution
from tf_ipmssl.training import evaluation
from tf_ipmssl.training import export
from tf_ipmssl.training import learning_rate_schedule
from tf_ipmssl.training import optimizers
from tf_ipmssl.training import random_streams
from tf_ipmssl.training import run_record
from tf_ipmssl.training import steps as steps_lib
from tf_ipmssl.training import summaries
from tf_ipmssl.training import termination
from tf_ipmssl.training import weight_averaging

MODES = ('ssl', 'supervised')
MIXED_PRECISION_POLICIES = (None, 'mixed_bfloat16', 'mixed_float16')


def _check_choice(name, value, choices):
  if value not in choices:
    raise errors.ConfigError(f'{name} = {value!r} is not one of {list(choices)}')


# (must be an integer, may be None, lowest value, lowest value allowed) of numeric bindings.
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
}


def _check_numbers(**values):
  """A ConfigError for a numeric binding of the wrong type, e.g. train.steps = 'ten'."""
  for name, value in values.items():
    integer, optional, lowest = _NUMBERS[name]
    errors.check_number(f'train.{name}', value, integer=integer, low=lowest,
                        optional=optional)


class RunState:
  """Every tf.Variable of a run besides the networks and optimizers (all checkpointed)."""

  def __init__(self, constraints):
    def counter(name, dtype=tf.int64, value=0):
      return tf.Variable(value, dtype=dtype, trainable=False, name=name,
                         aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    self.counters = {'step': counter('step'), 'critic_iteration': counter('critic_iteration'),
                     'nonfinite': counter('nonfinite')}
    self.multipliers = {c.name: counter(f'lambda_{c.name}', tf.float32, 0.0)
                        for c in constraints if c.has_multiplier}
    self.best = {'validation_error': counter('best_validation_error', tf.float32, np.inf),
                 'test_error': counter('best_test_error', tf.float32, np.nan),
                 'step': counter('best_step', tf.int64, -1)}


@dataclasses.dataclass
class Run:
  """The networks, optimizers and variables of one run, and (with a model_dir) its
  checkpoint managers: `manager` for the training checkpoints, `best_manager` for the
  critic of the best validation step."""
  critic: keras.Model
  generator: keras.Model
  averaged_critic: Optional[keras.Model]
  critic_optimizer: keras.optimizers.Optimizer
  generator_optimizer: keras.optimizers.Optimizer
  state: RunState
  loss_scaling: bool
  manager: Optional[tf.train.CheckpointManager] = None
  best_manager: Optional[tf.train.CheckpointManager] = None

  @property
  def evaluated_critic(self):
    """The critic that is evaluated, selected on validation and exported."""
    return self.averaged_critic or self.critic

  def training_steps(self, config, strategy=None):
    """The TrainingSteps (with steps.StepConfig `config`) that update this run."""
    return steps_lib.TrainingSteps(
        config, strategy=strategy or tf.distribute.get_strategy(), critic=self.critic,
        generator=self.generator, critic_optimizer=self.critic_optimizer,
        generator_optimizer=self.generator_optimizer, multipliers=self.state.multipliers,
        counters=self.state.counters, averaged_critic=self.averaged_critic)


def build_run(*, num_classes, image_shape, constraints=(), seed=0, optimizer='adam',
              critic_learning_rate=2e-4, generator_learning_rate=2e-4, adam_beta1=0.5,
              adam_beta2=0.999, adam_epsilon=1e-8, adam_epsilon_placement='bias_corrected',
              mixed_precision=None, critic_ema_decay=None, critic_options=None, strategy=None,
              model_dir=None, keep_checkpoints=2) -> Run:
  """Builds the networks, optimizers and run state of a run, as `train` does.

  The arguments are train's bindings of the same names; `critic_options` are further
  keyword arguments of build_critic (e.g. normalization, width). Variables are created
  under `strategy` (default: the current one) with the current global dtype policy. With
  a model_dir, the run also gets its checkpoint managers (nothing is restored).
  """
  strategy = strategy or tf.distribute.get_strategy()
  build_critic = lambda: critic_lib.build_critic(  # pylint: disable=unnecessary-lambda-assignment
      num_classes=num_classes, input_channels=image_shape[-1], seed=seed,
      **(critic_options or {}))
  make_optimizer = lambda rate: optimizers.make_optimizer(  # pylint: disable=unnecessary-lambda-assignment
      optimizer, rate, adam_beta1, adam_beta2, adam_epsilon, adam_epsilon_placement)
  with strategy.scope():
    critic = build_critic()
    generator = generator_lib.build_generator(output_channels=image_shape[-1], seed=seed)
    averaged_critic = None
    if critic_ema_decay is not None:
      averaged_critic = build_critic()
      weight_averaging.copy_weights(weight_averaging.averaged_pairs(critic, averaged_critic))
    critic_optimizer = make_optimizer(critic_learning_rate)
    generator_optimizer = make_optimizer(generator_learning_rate)
    loss_scaling = mixed_precision == 'mixed_float16'
    if loss_scaling:
      critic_optimizer = keras.optimizers.LossScaleOptimizer(critic_optimizer)
      generator_optimizer = keras.optimizers.LossScaleOptimizer(generator_optimizer)
    # Optimizer slots exist before the first traced step and before a restore.
    critic_optimizer.build(critic.trainable_variables)
    generator_optimizer.build(generator.trainable_variables)
    state = RunState(constraints)
  run = Run(critic, generator, averaged_critic, critic_optimizer, generator_optimizer, state,
            loss_scaling)
  if model_dir is not None:
    _add_checkpoint_managers(run, model_dir, keep_checkpoints)
  return run


def _add_checkpoint_managers(run, model_dir, keep_checkpoints):
  state = run.state
  checkpoint = tf.train.Checkpoint(
      critic=run.critic, generator=run.generator, critic_optimizer=run.critic_optimizer,
      generator_optimizer=run.generator_optimizer, **state.counters,
      multipliers=tf.train.Checkpoint(**state.multipliers),
      best=tf.train.Checkpoint(**state.best),
      **({'averaged_critic': run.averaged_critic} if run.averaged_critic is not None else {}))
  run.manager = tf.train.CheckpointManager(
      checkpoint, os.path.join(model_dir, run_files.CHECKPOINT_DIR), max_to_keep=keep_checkpoints)
  run.best_manager = tf.train.CheckpointManager(
      tf.train.Checkpoint(critic=run.evaluated_critic),
      os.path.join(model_dir, run_files.BEST_CHECKPOINT_DIR), max_to_keep=1)


@gin.configurable(denylist=['model_dir'])
def train(model_dir,
          mode='ssl',
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
  """Trains (or resumes) one run in model_dir; returns the metrics dict.

  Args:
    model_dir: where checkpoints, TensorBoard logs, config, metrics.json and export go.
    mode: 'ssl' (the IPM GAN, docs/algorithm.md#training-loop) or 'supervised' (the
      critic CNN with CE only, paper Appendix C; bind build_ssl_data.num_labeled = None for
      all labels).
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
  constraints = constraint_lib.scale_penalty_weights(_check_bindings(dict(locals())),
                                                     constraint_penalty_scale)
  critic_learning_rate *= learning_rate_scale
  generator_learning_rate *= learning_rate_scale
  started = time.time()
  if deterministic_ops:
    _make_deterministic()
  data = ssl_data.build_ssl_data()
  length = _training_length(data, mode, batch_size, critic_iterations, epochs, steps,
                            critic_updates)
  resuming = tf.train.latest_checkpoint(
      os.path.join(model_dir, run_files.CHECKPOINT_DIR)) is not None
  if resuming:
    run_record.check_config(model_dir)
  # A finished run (its export complete) only reports: nothing is written, so this also
  # works on a read-only file system.
  metrics = run_files.read_metrics(model_dir) or {}
  if _finished(metrics, length.total_steps, export_classifier,
               os.path.join(model_dir, run_files.EXPORT_DIR)):
    print(f'{model_dir} already finished ({metrics["step"]} steps); nothing to do.', flush=True)
    print(_final_line(metrics['step'], metrics, baseline, _run_data(data)), flush=True)
    return metrics

  if resuming:
    _set_aside_damaged_checkpoints(model_dir, metrics)
  keras.utils.set_random_seed(seed)
  keras.mixed_precision.set_global_policy(mixed_precision or 'float32')
  strategy = distribution.make_strategy()
  run = build_run(
      num_classes=data.num_classes, image_shape=data.image_shape, constraints=constraints,
      seed=seed, optimizer=optimizer, critic_learning_rate=critic_learning_rate,
      generator_learning_rate=generator_learning_rate, adam_beta1=adam_beta1,
      adam_beta2=adam_beta2, adam_epsilon=adam_epsilon,
      adam_epsilon_placement=adam_epsilon_placement, mixed_precision=mixed_precision,
      critic_ema_decay=critic_ema_decay, strategy=strategy, model_dir=model_dir,
      keep_checkpoints=keep_checkpoints)
  step = _restore(run, resuming, model_dir, length.total_steps, metrics)
  # Only now, with the restore done, is anything in the model dir rewritten.
  _record_start(model_dir, resuming, data)
  # Training done but the export missing or partial (killed while exporting): export again.
  training_done = step >= length.total_steps or bool(metrics.get('stopped_early'))
  steps_fn = run.training_steps(steps_lib.StepConfig(
      formulation=formulation, constraints=constraints, lambda_ce=lambda_ce,
      global_batch_size=batch_size, critic_iterations=critic_iterations, seed=seed,
      reference_pairwise_f=reference_pairwise_f, weight_decay_phi_s=weight_decay_phi_s,
      weight_decay_v=weight_decay_v, jit_compile=jit_compile, loss_scaling=run.loss_scaling,
      average_decay=critic_ema_decay, ipm_rampup_updates=ipm_rampup_updates,
      generator_loss=generator_loss), strategy)
  run_iteration = _iteration_fn(steps_fn, run, data, mode, batch_size, seed, strategy)
  loop = _Loop(model_dir, data, run, length, metrics, mode=mode, seed=seed,
               eval_batch_size=eval_batch_size, learning_rates=(
                   critic_learning_rate, generator_learning_rate, learning_rate_halving_epochs,
                   learning_rate_linear_decay_start),
               ipm_rampup_updates=ipm_rampup_updates, step=step)
  _print_start(mode, data, length, batch_size, strategy, model_dir)
  if learning_rate_scale != 1.0 or constraint_penalty_scale != 1.0:
    rhos = ', '.join(f'{c.name} {c.rho:g}' for c in constraints if c.has_multiplier)
    print(f'Scaled settings: learning rates x{learning_rate_scale:g} (critic '
          f'{critic_learning_rate:g}, generator {generator_learning_rate:g}); penalty weights '
          f'x{constraint_penalty_scale:g}' + (f' (ρ: {rhos})' if rhos else ''), flush=True)
  if early_stopping_patience is not None and not len(data.validation_labels):
    raise errors.ConfigError('train.early_stopping_patience needs a validation split '
                             '(build_ssl_data.validation_size > 0)')
  with termination.on_sigterm() as sigterm:
    step = _train_loop(loop, run_iteration, step, length, sigterm, training_done,
                       eval_every=eval_every, sample_every=sample_every, log_every=log_every,
                       checkpoint_every=checkpoint_every, export_classifier=export_classifier,
                       patience=(early_stopping_patience, early_stopping_min_steps))
  return _finish(loop, step, export_classifier, started, baseline)


def _train_loop(loop, run_iteration, step, length, sigterm, training_done, *, eval_every,
                sample_every, log_every, checkpoint_every, export_classifier, patience):
  """Trains from `step` to the end (or an early stop); returns the last step. Ctrl-C:
  errors.Interrupted (checkpoints up to the last `checkpoint_every`). SIGTERM: a checkpoint
  at the step in progress once it is complete, then errors.Terminated."""
  try:
    while step < length.total_steps and not training_done:
      loop.set_learning_rates(step)
      values = run_iteration()
      step += 1
      loop.record_operative_config_once()
      last = step == length.total_steps
      # Evaluate first: the progress line then shows this step's validation error, and its
      # time per step (and ETA) includes the evaluations.
      if step % eval_every == 0 or last:
        loop.evaluate(step, last)
      if step % sample_every == 0 or last:
        loop.write_samples(step)
      if step % log_every == 0 or last:
        loop.log(step, values)
      stop = step % eval_every == 0 and not last and loop.patience_ran_out(step, *patience)
      if stop:
        loop.complete_final_evaluation(step)
      saved = step % checkpoint_every == 0 or last or stop
      if saved:
        # Finished only once the export is complete (below).
        loop.save(step, finished=(last or stop) and not export_classifier)
      if stop:
        break
      if sigterm.requested and not last:
        if not saved:
          loop.save(step, finished=False)
        raise errors.Terminated(
            f'terminated (SIGTERM) at step {step}; checkpoint '
            f'{loop.run.manager.latest_checkpoint} written: rerun the same command to resume')
  except KeyboardInterrupt:
    kept = loop.run.manager.latest_checkpoint or 'none yet'
    raise errors.Interrupted(
        f'interrupted at step {step}; rerun the same command to resume (latest checkpoint: '
        f'{kept})') from None
  return step


def _run_data(data):
  return baseline_lib.RunData(dataset=data.name, labels=data.num_labeled,
                              split_seed=data.split_seed)


def _check_bindings(bindings):
  """ConfigErrors for train's bindings; returns the validated constraints (() if
  supervised)."""
  b = bindings
  _check_choice('train.mode', b['mode'], MODES)
  _check_choice('train.mixed_precision', b['mixed_precision'], MIXED_PRECISION_POLICIES)
  formulations.check_formulation(b['formulation'])
  constraints = ()
  if b['mode'] == 'ssl':
    constraints = constraint_lib.validate_constraints(b['formulation'], b['constraints'])
  if b['epochs'] is None and b['steps'] is None and b['critic_updates'] is None:
    raise errors.ConfigError('set the training length: train.epochs, train.critic_updates '
                             'or train.steps')
  _check_numbers(**{name: b[name] for name in _NUMBERS})
  baseline_lib.check_spec(b['baseline'])
  decay_start = b['learning_rate_linear_decay_start']
  if decay_start is not None and not decay_start < 1.0:
    raise errors.ConfigError('train.learning_rate_linear_decay_start is a fraction of the '
                             f'run in [0, 1), got {decay_start!r}')
  ema = b['critic_ema_decay']
  if ema is not None and not (isinstance(ema, float) and 0.0 < ema < 1.0):
    raise errors.ConfigError(f'train.critic_ema_decay must be None or a float in (0, 1), got '
                             f'{ema!r}')
  for name, unit in (('ipm_rampup_updates', 'critic updates'),
                     ('early_stopping_patience', 'steps')):
    value = b[name]
    if value is not None and (not isinstance(value, int) or value < 1):
      raise errors.ConfigError(f'train.{name} must be None or a positive integer ({unit}), '
                               f'got {value!r}')
  for name in ('batch_size', 'critic_iterations', 'log_every', 'eval_every',
               'checkpoint_every', 'sample_every'):
    if not isinstance(b[name], int) or b[name] < 1:
      raise errors.ConfigError(f'train.{name} must be a positive integer, got {b[name]!r}')
  return constraints


@dataclasses.dataclass(frozen=True)
class _Length:
  """How long a run trains: steps, critic iterations per step and per epoch, images per
  step."""
  total_steps: int
  iterations_per_step: int
  iterations_per_epoch: int
  images_per_step: int

  def epoch(self, step):
    return step * self.iterations_per_step / self.iterations_per_epoch


def _training_length(data, mode, batch_size, critic_iterations, epochs, steps,
                     critic_updates=None):
  epoch_size = len(data.unlabeled_images) if mode == 'ssl' else len(data.labeled_images)
  if mode == 'ssl' and len(data.labeled_images) == 0:
    raise errors.ConfigError('SSL training needs labeled examples (build_ssl_data.num_labeled)')
  iterations_per_epoch = max(pipelines.steps_per_epoch(epoch_size, batch_size), 1)
  iterations_per_step = critic_iterations if mode == 'ssl' else 1
  if steps is not None:
    total_steps = steps
  elif critic_updates is not None:
    total_steps = -(-critic_updates // iterations_per_step)
  else:
    total_steps = int(math.ceil(epochs * iterations_per_epoch / iterations_per_step))
  return _Length(total_steps, iterations_per_step, iterations_per_epoch,
                 batch_size * iterations_per_step)


def _record_start(model_dir, resuming, data):
  run_record.record_start(model_dir, resuming)
  run_record.remove_partial_checkpoints(
      [os.path.join(model_dir, run_files.CHECKPOINT_DIR),
       os.path.join(model_dir, run_files.BEST_CHECKPOINT_DIR)])
  run_record.record_dataset(model_dir, data)


def _set_aside_damaged_checkpoints(model_dir, metrics):
  """Moves damaged checkpoints aside (checkpoint_integrity.py), saying so in one line each;
  the run then resumes from the newest intact one."""
  latest, damaged = None, False
  for directory in (run_files.CHECKPOINT_DIR, run_files.BEST_CHECKPOINT_DIR):
    newest, messages = checkpoint_integrity.set_aside_damaged(
        model_dir, os.path.join(model_dir, directory))
    for message in messages:
      print(message, flush=True)
    if directory == run_files.CHECKPOINT_DIR:
      latest, damaged = newest, bool(messages)
  if damaged:
    if latest is None:
      raise errors.UserError(
          f'no intact checkpoint is left in {model_dir}/{run_files.CHECKPOINT_DIR} (the '
          f'damaged ones are in {model_dir}/{checkpoint_integrity.DAMAGED_DIR}/); start again '
          'with a new --model_dir')
    for key in ('finished', 'stopped_early'):  # They described the damaged checkpoint.
      metrics.pop(key, None)


def _restore(run, resuming, model_dir, total_steps, metrics):
  """Restores the latest checkpoint when resuming; returns the step to continue from."""
  if resuming:
    latest = run.manager.latest_checkpoint
    run.manager.checkpoint.restore(latest).assert_existing_objects_matched()
    logging.info('Resumed from %s', latest)
    print(f'Resuming from {latest}', flush=True)
  step = int(run.state.counters['step'].numpy())
  if step >= total_steps or metrics.get('stopped_early'):
    print(f'{model_dir} finished training ({step} steps) but its {run_files.EXPORT_DIR}/ is '
          'missing or incomplete; exporting again.', flush=True)
  return step


def _iteration_fn(steps_fn, run, data, mode, batch_size, seed, strategy):
  """A callable running one training iteration on the run's data streams."""
  critic_iteration = int(run.state.counters['critic_iteration'].numpy())
  labeled = iter(strategy.experimental_distribute_dataset(pipelines.training_stream(
      data.labeled_images, data.labeled_labels, batch_size=batch_size, seed=seed,
      start_step=critic_iteration)))
  if mode != 'ssl':
    return lambda: steps_fn.supervised_iteration(labeled)
  unlabeled = iter(strategy.experimental_distribute_dataset(pipelines.training_stream(
      data.unlabeled_images, batch_size=batch_size, seed=seed + 1,
      start_step=critic_iteration)))
  return lambda: steps_fn.ssl_iteration(labeled, unlabeled)


def _print_start(mode, data, length, batch_size, strategy, model_dir):
  print(f'Training {mode} on {data.name} ({data.source}): {len(data.labeled_images)} labeled, '
        f'{len(data.unlabeled_images)} unlabeled, {len(data.validation_labels)} validation, '
        f'{len(data.test_labels)} test; {length.total_steps} steps '
        f'({length.iterations_per_step} critic iteration(s) each, batch {batch_size}, '
        f'{strategy.num_replicas_in_sync} replica(s)) -> {model_dir}', flush=True)


class _Loop:
  """What the training loop does besides training: learning-rate schedule, evaluation and
  model selection, samples, logging, early stopping and checkpoints."""

  def __init__(self, model_dir, data, run, length, metrics, *, mode, seed, eval_batch_size,
               learning_rates, ipm_rampup_updates, step):
    self.model_dir, self.data, self.run, self.length = model_dir, data, run, length
    self.metrics = metrics
    self.mode, self.eval_batch_size = mode, eval_batch_size
    # (critic, generator, halving epochs or None, linear decay start or None).
    self.learning_rates = learning_rates
    self.ipm_rampup_updates = ipm_rampup_updates
    self.writer = tf.summary.create_file_writer(
        os.path.join(model_dir, run_files.TRAIN_SUMMARY_DIR))
    self.eval_writer = tf.summary.create_file_writer(
        os.path.join(model_dir, run_files.EVAL_SUMMARY_DIR))
    self.predict = evaluation.make_predict_fn(run.evaluated_critic)
    self.sample_noise = tf.random.stateless_normal(
        [64, run.generator.noise_dim],
        seed=random_streams.stream_seed(seed, random_streams.SAMPLE_NOISE, 0))
    self.validation_error = metrics.get('last_validation_error')
    self.interval_start, self.interval_first_step = time.time(), step
    self.wrote_operative_config = False

  def set_learning_rates(self, step):
    critic_rate, generator_rate, halving_epochs, linear_decay_start = self.learning_rates
    if halving_epochs is None and linear_decay_start is None:
      return
    factor = learning_rate_schedule.learning_rate_factor(
        step, self.length.total_steps, self.length.epoch(step), halving_epochs,
        linear_decay_start)
    self.run.critic_optimizer.learning_rate.assign(critic_rate * factor)
    self.run.generator_optimizer.learning_rate.assign(generator_rate * factor)

  def record_operative_config_once(self):
    if not self.wrote_operative_config:
      run_record.record_operative_config(self.model_dir)
      self.wrote_operative_config = True

  def check_finite(self, step):
    """TrainingDivergedError (after recording it in metrics.json) once a loss was NaN/Inf."""
    if not int(self.run.state.counters['nonfinite'].numpy()):
      return
    run_files.write_metrics(self.model_dir, {
        **_metrics(self.metrics, self.run.state, step, self.length.total_steps,
                   finished=False),
        'diverged_before_step': step})
    manager = self.run.manager
    kept = (f'the last good checkpoint in {manager.directory} ({manager.latest_checkpoint}) '
            'was left intact' if manager.latest_checkpoint else
            'no checkpoint had been written yet')
    raise errors.TrainingDivergedError(
        f'a loss became NaN or Inf before step {step}; training stopped and {kept}. '
        'Lower the learning rates or check the constraint weights (ρ, λ_GP).')

  def evaluate(self, step, last):
    """The validation error; a new best saves the best critic. The test error is computed
    only where it can be reported: at a new best validation error, at the last step, and at
    every evaluation of a run without a validation split."""
    self.check_finite(step)
    data, best = self.data, self.run.state.best
    val_error = None
    if len(data.validation_labels):
      val_error = evaluation.error_rate(self.predict, data.validation_images,
                                        data.validation_labels, self.eval_batch_size)
    # Model selection uses the validation split only
    # (docs/algorithm.md#data-and-model-selection); without one there is no best.
    improved = val_error is not None and val_error < float(best['validation_error'].numpy())
    test_error = None
    if improved or last or val_error is None:
      test_error = self.test_error()
    if improved:
      best['validation_error'].assign(val_error)
      best['test_error'].assign(test_error)
      best['step'].assign(step)
      self.run.best_manager.save(checkpoint_number=step)
    scalars = {} if test_error is None else {'eval/test_error': test_error}
    if val_error is not None:
      scalars['eval/validation_error'] = val_error
    summaries.write_scalars(self.eval_writer, step, scalars)
    self.validation_error = val_error
    self.metrics.update({'last_validation_error': val_error, 'last_test_error': test_error,
                         'last_eval_step': step})

  def test_error(self):
    return evaluation.error_rate(self.predict, self.data.test_images, self.data.test_labels,
                                 self.eval_batch_size)

  def complete_final_evaluation(self, step):
    """The test error of an early stop's last evaluation, which did not improve."""
    if self.metrics.get('last_test_error') is None:
      test_error = self.test_error()
      summaries.write_scalars(self.eval_writer, step, {'eval/test_error': test_error})
      self.metrics['last_test_error'] = test_error

  def write_samples(self, step):
    if self.mode != 'ssl':
      return
    grid = summaries.image_grid(
        tf.cast(self.run.generator(self.sample_noise, training=False), tf.float32))
    with self.writer.as_default(step=step):
      tf.summary.image('generator_samples', grid)

  def log(self, step, values):
    """TensorBoard scalars and the progress line, timed since the previous line."""
    self.check_finite(step)
    run, length = self.run, self.length
    seconds = (time.time() - self.interval_start) / (step - self.interval_first_step)
    images_per_second = length.images_per_step / seconds
    scalars = {k: float(v) for k, v in values.items()}
    scalars.update({f'lambda/{k}': float(v.numpy()) for k, v in run.state.multipliers.items()})
    scalars['norm/v'] = float(tf.norm(run.critic.v_variables[0]))
    scalars['norm/S'] = float(tf.norm(run.critic.s_head.kernel))
    scalars['time/step_seconds'] = seconds
    scalars['images_per_second'] = images_per_second
    scalars['learning_rate/critic'] = float(run.critic_optimizer.learning_rate.numpy())
    if self.mode == 'ssl':
      scalars['learning_rate/generator'] = float(
          run.generator_optimizer.learning_rate.numpy())
    if self.ipm_rampup_updates is not None:
      scalars['ipm_weight'] = float(ipm_rampup.rampup_weight(
          run.state.counters['critic_iteration'], self.ipm_rampup_updates))
    summaries.write_scalars(self.writer, step, scalars)
    shown = {k: v for k, v in scalars.items()
             if k in ('ce', 'ipm', 'critic_loss', 'generator_loss')
             or k.startswith(('omega/', 'lambda/'))}
    print(summaries.progress_line(step, length.total_steps, length.epoch(step),
                                  images_per_second, seconds * (length.total_steps - step),
                                  shown, self.validation_error), flush=True)
    self.interval_start, self.interval_first_step = time.time(), step

  def patience_ran_out(self, step, patience, min_steps):
    """Whether to stop early at this step (recorded in the metrics, announced)."""
    best_step = int(self.run.state.best['step'].numpy())
    if not (patience is not None and best_step >= 0 and step >= min_steps
            and step - best_step >= patience):
      return False
    self.metrics['stopped_early'] = step
    print(f'Stopping early at step {step}: no validation improvement since step '
          f'{best_step} (patience {patience})', flush=True)
    return True

  def save(self, step, finished):
    self.check_finite(step)
    self.run.manager.save(checkpoint_number=step)
    run_files.write_metrics(self.model_dir, _metrics(
        self.metrics, self.run.state, step, self.length.total_steps, finished=finished))


def _finish(loop, step, export_classifier, started, baseline):
  """Exports the selected classifier, writes the final metrics.json and the result line."""
  run = loop.run
  exported = None
  if export_classifier:
    exported = _export_selected_classifier(run.evaluated_critic, loop.data, loop.model_dir,
                                           run.best_manager, run.state, step)
  metrics = _metrics(loop.metrics, run.state, step, loop.length.total_steps, finished=True)
  metrics['exported'] = exported
  metrics['wall_seconds_this_session'] = time.time() - started
  run_files.write_metrics(loop.model_dir, metrics)
  print(_final_line(step, metrics, baseline, _run_data(loop.data)), flush=True)
  return metrics


def _export_selected_classifier(critic, data, model_dir, best_manager, state, step):
  """Exports the classifier the run reports: that of the best validation step
  (docs/algorithm.md#data-and-model-selection), or the last step's when there is no
  validation split. The in-memory critic is left at
  the exported weights; the training checkpoints (the last step) are not touched.

  Returns {'checkpoint': 'best' | 'latest', 'step': step exported}.
  """
  selected = {'checkpoint': 'latest', 'step': int(step)}
  if best_manager.latest_checkpoint:
    # The manager's own Checkpoint(critic=critic): restores into the in-memory critic.
    best_manager.checkpoint.restore(
        best_manager.latest_checkpoint).assert_existing_objects_matched()
    selected = {'checkpoint': 'best', 'step': int(state.best['step'].numpy())}
  export.export_classifier(critic, data.image_shape,
                           os.path.join(model_dir, run_files.EXPORT_DIR), data.num_classes,
                           data.name)
  return selected


def _finished(metrics, total_steps, export_classifier, export_dir):
  """Whether metrics.json records a finished run whose export (if wanted) is complete."""
  done = metrics.get('step', -1) >= total_steps or metrics.get('stopped_early')
  return bool(metrics.get('finished') and done and (
      not export_classifier or export.export_is_complete(export_dir)))


def _final_line(step, metrics, baseline=None, run_data=None):
  """The run's result: the test error at the best validation step (the number to report,
  docs/algorithm.md#data-and-model-selection) first, then the last step's; with `baseline`
  (train.baseline) and `run_data` (baseline.RunData), the comparison of baseline.py."""
  best, final = metrics['best'], metrics['final']
  if best['step'] < 0 or best['test_error'] is None:
    return (f'Finished {step} steps: test error {_fmt(final["test_error"])} at the last step '
            '(no validation split, so no model selection)')
  line = (f'Finished {step} steps: test error {_fmt(best["test_error"])} at the best '
          f'validation step {best["step"]} (validation {_fmt(best["validation_error"])}); '
          f'last step: test error {_fmt(final["test_error"])}')
  exported = metrics.get('exported')
  if baseline and run_data:
    line += baseline_lib.comparison_text(baseline, run_data, best['test_error'])
  if exported:
    line += f'. {run_files.EXPORT_DIR}/ holds the classifier of step {exported["step"]}'
  return line


def _make_deterministic():
  """Bit-exact runs on CPU: deterministic kernels and one thread per op.

  Op determinism alone left ulp-level differences between processes in multi-threaded CPU
  reductions; single-threaded execution removes them (and is slower: use it for tests and
  debugging, not for long runs).
  """
  tf.config.experimental.enable_op_determinism()
  try:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:  # The runtime already started, e.g. a second run in one process.
    if tf.config.threading.get_intra_op_parallelism_threads() != 1:
      logging.warning('deterministic_ops: TensorFlow already started with several threads '
                      'per op; results may differ from other processes in the last bits.')


def _fmt(value):
  return 'n/a' if value is None else f'{value:.2f}%'


def _metrics(metrics, state, step, total_steps, finished):
  def number(v):
    v = float(v.numpy())
    return None if not math.isfinite(v) else v
  out = dict(metrics)
  out.update({
      'step': step, 'total_steps': total_steps, 'finished': finished,
      'final': {'step': metrics.get('last_eval_step'),
                'validation_error': metrics.get('last_validation_error'),
                'test_error': metrics.get('last_test_error')},
      'best': {'step': int(state.best['step'].numpy()),
               'validation_error': number(state.best['validation_error']),
               'test_error': number(state.best['test_error'])},
      'multipliers': {k: float(v.numpy()) for k, v in state.multipliers.items()},
  })
  return out
