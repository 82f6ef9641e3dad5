"""The training run behind `bin/train`: data, the run, its files, the loop, the export.

`train(model_dir, config)` trains (or resumes) one run. Its configuration is a validated
run_config.RunConfig (bin/train's `configurables.run_config()`), built before the model dir is
touched; nothing here reads gin. Re-running it on an existing model_dir resumes from the
latest checkpoint: the data streams and all noise are pure functions of the seed and a
counter the checkpoint holds (random_streams.py), the dropout RNG state is checkpointed
with the critic, so a resumed run ends with the weights of an uninterrupted one.

The pieces: run.Run (networks, optimizers, variables, checkpoints), loop.py (the loop and its
periodic work), run_dir/reporting.py (metrics.json and the final line), run_dir/run_record.py
(config.gin, run_config.json, versions.json, dataset.json).
"""
import dataclasses
import math
import os
import shlex
import sys
import time

from absl import logging
import keras
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import fault_injection
from tf_ipmssl.data import augmentation
from tf_ipmssl.data import pipelines
from tf_ipmssl.data import ssl_data
from tf_ipmssl.run_dir import checkpoint_integrity
from tf_ipmssl.run_dir import reporting
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import run_record
from tf_ipmssl.serving import export
from tf_ipmssl.serving import score_graph
from tf_ipmssl.training import distribution
from tf_ipmssl.training import loop as loop_lib
from tf_ipmssl.training import precision
from tf_ipmssl.training import random_streams
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import stop_request
from tf_ipmssl.training import tensorboard


def train(model_dir, config, started=None):
  """Trains (or resumes) one run in model_dir; returns the metrics dict.

  Args:
    model_dir: where checkpoints, TensorBoard logs, config, metrics.json and export go.
    config: the run_config.RunConfig (its settings are documented in run_config.py).
    started: time.time() at the start of the current session (bin/train: the process's start,
      wall_time.process_started); default: now.
  """
  started = time.time() if started is None else started
  if config.train.deterministic_ops:
    _make_deterministic()
  data = ssl_data.build_ssl_data(config.build_ssl_data)
  length = training_length(data, config)
  _check_data(config, data)
  # A checkpoint list naming a checkpoint is a run to resume, even where the newest one's
  # files are gone (then it resumes from the newest intact one).
  resuming = bool(checkpoint_integrity.listed(os.path.join(model_dir, run_files.CHECKPOINT_DIR)))
  if resuming:
    run_lib.check_config(model_dir, config)
  # A finished run (its export complete) only reports: nothing is written, so this also
  # works on a read-only file system.
  metrics = _read_metrics(model_dir)
  if _finished(metrics, length.total_steps, config.train.export_classifier,
               os.path.join(model_dir, run_files.EXPORT_DIR)):
    print(f'{model_dir} already finished ({metrics["step"]} steps); nothing to do.', flush=True)
    print(reporting.final_line(metrics['step'], metrics, config.train.baseline,
                               reporting.run_data(data)), flush=True)
    return metrics
  run_files.check_writable(model_dir)  # Before anything is repaired or written.
  if resuming:
    _set_aside_damaged_checkpoints(model_dir, metrics)
  strategy, run = _build_run(config, data, model_dir)
  step = _restore(run, resuming, model_dir, length.total_steps, metrics)
  # Only now, with the restore done, is anything in the model dir rewritten.
  _write_start_files(model_dir, resuming, data, config)
  # Training done but the export missing or partial (killed while exporting): export again.
  training_done = step >= length.total_steps or bool(metrics.get('stopped_early'))
  # The class train.mode names (semi_supervised.SemiSupervised for 'ssl'), updating `run`;
  # the loop calls its `train_step` on `streams` once per step.
  algorithm = config.algorithm(run, strategy)
  streams = _training_streams(run, data, strategy)
  loop = loop_lib.Loop(model_dir, data, run, length, metrics, step, started)
  _print_start(config, data, length, strategy, model_dir)
  with stop_request.on_sigterm() as sigterm:
    step = loop_lib.train_loop(loop, algorithm, streams, step, sigterm, training_done)
    return _finish(loop, step)  # SIGTERM here: the export completes (stop_request.py).


def _read_metrics(model_dir):
  """The run's metrics.json; {} where it is missing, and where it cannot be read (damaged:
  said in one line naming it, and read as missing: a run with checkpoints resumes from the
  latest, whose run state holds its evaluations, and writes the file again)."""
  try:
    return run_files.read_metrics(model_dir) or {}
  except (OSError, ValueError) as e:
    path = os.path.join(model_dir, run_files.METRICS_FILE)
    cause = errors.first_line(e)
    print(f'{path} is damaged and cannot be read ({type(e).__name__}: {cause}); read as '
          'missing: the run goes on from its latest checkpoint and writes it again',
          flush=True)
    return {}


def _check_data(config, data):
  """ConfigErrors for a configuration the data or this machine cannot train (before
  anything is written)."""
  config.algorithm.check_data(data)
  precision.check_policy(config.train.mixed_precision)
  if config.train.early_stopping_patience is not None and not len(data.validation_labels):
    raise errors.ConfigError('train.early_stopping_patience needs a validation split '
                             '(build_ssl_data.validation_size > 0)')
  if config.train.validation_subset_per_class is not None and not len(data.validation_labels):
    raise errors.ConfigError('train.validation_subset_per_class needs a validation split '
                             '(build_ssl_data.validation_size > 0)')


def _build_run(config, data, model_dir):
  """Seeds, dtype policy and strategy set as the run's configuration says; the Run."""
  keras.utils.set_random_seed(config.train.seed)
  keras.mixed_precision.set_global_policy(config.train.mixed_precision or 'float32')
  strategy = distribution.make_strategy(config.make_strategy)
  run = run_lib.Run.build(config, num_classes=data.num_classes, image_shape=data.image_shape,
                          strategy=strategy, model_dir=model_dir)
  return strategy, run


def _restore(run, resuming, model_dir, total_steps, metrics):
  """Restores the latest checkpoint when resuming; returns the step to continue from."""
  if resuming:
    latest = run.manager.latest_checkpoint
    run.restore_to_train(latest)
  step = int(run.state.counters['step'].numpy())
  if resuming:
    logging.info('Resumed from %s (step %d)', latest, step)
    print(f'Resuming from {latest} (step {step})', flush=True)
  if step >= total_steps or metrics.get('stopped_early'):
    print(f'{model_dir} finished training ({step} steps) but its {run_files.EXPORT_DIR}/ is '
          'missing or incomplete; exporting again.', flush=True)
  return step


def _training_streams(run, data, strategy):
  """The distributed iterators the run's algorithm reads (algorithms.Algorithm.streams),
  each continuing from the run's critic update counter."""
  config = run.config
  critic_updates = int(run.state.counters['critic_updates'].numpy())

  def stream(name, images, labels, seed_offset):
    return iter(strategy.experimental_distribute_dataset(pipelines.training_stream(
        images, labels, batch_size=config.train.batch_size,
        seed=config.train.seed + seed_offset, start_step=critic_updates,
        augment=_augment_fn(config, name))))

  return config.algorithm.streams(data, stream)


def _augment_fn(config, stream):
  """None for a stream without augmentation, else the function augmenting its batch t with
  the seed (train.seed, the stream, t) (random_streams.AUGMENTATION): the same numbers in
  every session of the run (docs/algorithm.md#augmentation)."""
  augment = config.augmentations[stream]
  if not augment.active:
    return None
  return lambda x, t: augment(x, random_streams.stream_seed(
      config.train.seed, random_streams.AUGMENTATION[stream], t))


def _print_start(config, data, length, strategy, model_dir):
  if not len(data.validation_labels):
    print('No validation split: no step is selected (selecting on the labeled images the run '
          "trains on would pick the most overfitted one); the last step's classifier is "
          'reported' + (' and exported' if config.train.export_classifier else ''), flush=True)
  print(f'Training {config.mode} on {data.name} ({data.source}): {len(data.labeled_images)} '
        f'labeled, {len(data.unlabeled_images)} unlabeled, {len(data.validation_labels)} '
        f'validation, {len(data.test_labels)} test; {length.total_steps} steps '
        f'({length.critic_updates_per_step} critic update(s) each, batch '
        f'{config.train.batch_size}, {strategy.num_replicas_in_sync} replica(s)) -> '
        f'{model_dir}', flush=True)
  augmented = augmentation.describe(config.augmentations)
  if augmented != 'none':
    print(f'Augmentation: {augmented} (docs/algorithm.md#augmentation)', flush=True)
  algorithm_scaled = config.algorithm.scaled_settings(config.algorithm_settings)
  if config.train.learning_rate_scale != 1.0 or algorithm_scaled:
    print(f'Scaled settings: learning rates x{config.train.learning_rate_scale:g} (critic '
          f'{config.critic_rate:g}, generator {config.generator_rate:g})' +
          (f'; {algorithm_scaled}' if algorithm_scaled else ''), flush=True)


def _finish(loop, step):
  """Measures the selected classifier on the test images of the dataset's other classes (a
  run on a class subset), exports it, writes the final metrics.json and the result line."""
  run, config, data = loop.run, loop.config, loop.data
  loop.split.switch('teardown')
  fault_injection.reach('training_done')
  foreign_test = exported = None
  measures = _measures_foreign_images(data)
  if measures or config.train.export_classifier:
    # The classifier the run reports, restored once, and its scores' thresholds, fitted
    # once: the foreign-image test applies the thresholds the export states.
    with loop.split.charged_to('evaluation' if measures else 'export'):
      selected = _restore_selected(run, step)
      scoring = score_graph.fit(run.evaluated_critic, config.formulation, data)
    if measures:
      with loop.split.charged_to('evaluation'):
        foreign_test = {'step': selected['step'], 'checkpoint': selected['checkpoint'],
                        **score_graph.foreign_test(run.evaluated_critic, config.formulation,
                                                   data, scoring)}
    if config.train.export_classifier:
      with loop.split.charged_to('export'):
        summary = {'metrics': _with_foreign_test(
                       loop.metrics(step, finished=True, now=time.time()), foreign_test),
                   'counts': data.counts(), 'source': data.source,
                   'trained_by': shlex.join(sys.argv), 'checkpoint': selected['checkpoint']}
        _export_classifier(run, data, loop.model_dir, scoring, summary)
        exported = selected
  now = time.time()
  metrics = loop.metrics(step, finished=True, now=now)
  metrics['exported'] = exported
  metrics = _with_foreign_test(metrics, foreign_test)
  metrics['wall_seconds_this_session'] = now - loop.started
  metrics['wall_split_this_session'] = loop.split.read(now)
  if 'wall_split' in metrics:  # The run's split, in TensorBoard beside its curves.
    tensorboard.write_scalars(loop.writer, step, {
        f'time/{part}_seconds': seconds for part, seconds in metrics['wall_split'].items()})
  run_files.write_metrics(loop.model_dir, metrics)
  tensorboard.write_run(loop.model_dir)  # Summaries only, after training: no number changes.
  print(reporting.final_line(step, metrics, config.train.baseline,
                             reporting.run_data(data)), flush=True)
  return metrics


def _measures_foreign_images(data):
  """Whether the run measures metrics.json's `foreign_test` (run_dir/reporting.py): a run
  with test images of its dataset's other classes (build_ssl_data.classes). Measured after
  training on the selected classifier, without RNG: no trained number moves, and a rerun
  measures the same."""
  return (data.foreign_test_images is not None and len(data.foreign_test_images) > 0
          and len(data.test_images) > 0)


def _with_foreign_test(metrics, foreign_test):
  """metrics with its `foreign_test` where there is one (no key otherwise)."""
  return metrics if foreign_test is None else {**metrics, 'foreign_test': foreign_test}


def _restore_selected(run, step):
  """Leaves the in-memory critic (run.evaluated_critic) at the classifier the run reports:
  that of the best validation step (docs/algorithm.md#data-and-model-selection), or the last
  step's (`step`, the weights it holds after training) when there is no validation split. The
  training checkpoints (the last step) are not touched.

  Returns {'checkpoint': 'best' | 'latest', 'step': the selected step}.
  """
  best_manager = run.best_manager
  if not best_manager.latest_checkpoint:
    return {'checkpoint': 'latest', 'step': int(step)}
  # The manager's own Checkpoint(critic=evaluated critic): restores into it.
  best_manager.checkpoint.restore(
      best_manager.latest_checkpoint).assert_existing_objects_matched()
  return {'checkpoint': 'best', 'step': int(run.state.best['step'].numpy())}


def _export_classifier(run, data, model_dir, scoring, summary):
  """Exports the in-memory critic (the classifier _restore_selected left there) with the
  scores' metadata `scoring` (score_graph.fit) and the model card's `summary`."""
  export.export_classifier(
      run.evaluated_critic, data.image_shape, os.path.join(model_dir, run_files.EXPORT_DIR),
      data.num_classes, data.name, data.class_names, run_record.resize_rule(data), scoring,
      summary)


@dataclasses.dataclass(frozen=True)
class Length:
  """How long a run trains: steps, critic updates per step and per epoch, images per
  step."""
  total_steps: int
  critic_updates_per_step: int
  critic_updates_per_epoch: int
  images_per_step: int

  def epoch(self, step):
    return step * self.critic_updates_per_step / self.critic_updates_per_epoch


def training_length(data, config):
  """The Length of a run of `config` on `data`: train.steps, else train.critic_updates, else
  train.epochs (passes of the critic updates over the algorithm's epoch set)."""
  train, algorithm = config.train, config.algorithm
  updates_per_epoch = max(pipelines.steps_per_epoch(algorithm.epoch_size(data),
                                                    train.batch_size), 1)
  updates_per_step = algorithm.critic_updates_per_step(config.algorithm_settings)
  if train.steps is not None:
    total_steps = train.steps
  elif train.critic_updates is not None:
    total_steps = -(-train.critic_updates // updates_per_step)
  else:
    total_steps = int(math.ceil(train.epochs * updates_per_epoch / updates_per_step))
  return Length(total_steps, updates_per_step, updates_per_epoch,
                train.batch_size * updates_per_step)


def _write_start_files(model_dir, resuming, data, config):
  run_record.write_start_files(model_dir, resuming, config, precision.summation_order_fixed())
  run_record.remove_partial_checkpoints(
      [os.path.join(model_dir, run_files.CHECKPOINT_DIR),
       os.path.join(model_dir, run_files.BEST_CHECKPOINT_DIR)])
  run_record.write_dataset(model_dir, data)


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


def _finished(metrics, total_steps, export_classifier, export_dir):
  """Whether metrics.json says the run finished, and its export (if wanted) is complete."""
  done = metrics.get('step', -1) >= total_steps or metrics.get('stopped_early')
  return bool(metrics.get('finished') and done and (
      not export_classifier or export.export_is_complete(export_dir)))


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
