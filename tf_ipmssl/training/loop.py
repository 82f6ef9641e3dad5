"""The training loop and what it does besides training: the learning-rate schedule,
evaluation and model selection, samples, logging (TensorBoard and the progress line, progress.py),
early stopping and checkpoints.

`train_loop` runs a run's steps from a given one to the end (or an early stop); `Loop`
holds the periodic work. Ctrl-C ends the loop with errors.Interrupted (checkpoints up to the
last `checkpoint_every`); SIGTERM with a checkpoint at the step in progress, then
errors.Terminated (before the session's first step: at once, with nothing new to save).
A checkpoint SIGTERM adds between two `checkpoint_every` steps leaves the save counter
where it was, so that the resumed run's checkpoints equal an uninterrupted run's.

SIGTERM is a request to stop at the end of the current step (stop_request.py): the loop
checks it after every completed step.
"""
import functools
import math
import os
import re
import time

import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import fault_injection
from tf_ipmssl.run_dir import class_results
from tf_ipmssl.run_dir import reporting
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import run_record
from tf_ipmssl.run_dir import wall_time
from tf_ipmssl.training import evaluation
from tf_ipmssl.training import optimizers
from tf_ipmssl.training import progress
from tf_ipmssl.training import random_streams
from tf_ipmssl.training import tensorboard

def _charged_to(part):
  """Decorates a Loop method whose wall time goes to `part` (wall_time.PARTS)."""
  def decorate(method):
    @functools.wraps(method)
    def charged(self, *args, **kwargs):
      with self.split.charged_to(part):
        return method(self, *args, **kwargs)
    return charged
  return decorate


class Loop:
  """The periodic work of one run's training (see the module doc)."""

  def __init__(self, model_dir, data, run, length, metrics, step, started=None):
    """metrics: metrics.json's content so far ({} for a new run); step: the first step;
    started: time.time() at the start of this bin/train session (default: now), where its
    wall-time split (wall_time.Split) begins."""
    self.model_dir, self.data, self.run, self.length = model_dir, data, run, length
    self.config = run.config
    # The latest evaluation: the checkpoint's (the metrics.json beside it may be older).
    self.examples = reporting.evaluated_examples(data)
    latest = metrics.get('final') or {}
    if int(run.state.latest['step'].numpy()) >= 0:
      latest = reporting.evaluation_of(run.state.latest, self.examples)
    self.latest = {key: latest.get(key) for key in reporting.EVALUATION_KEYS}
    self.extra = {k: v for k, v in metrics.items() if k == 'stopped_early'}
    self.started = time.time() if started is None else started
    # The earlier sessions' wall time; None where metrics.json holds none (older ones lack
    # it: reporting.py).
    self.wall_before = metrics.get('wall_seconds') if step else 0.0
    self.split = wall_time.Split(self.started)
    self.split_before = metrics.get('wall_split') if step else {}
    self.writer = tf.summary.create_file_writer(
        os.path.join(model_dir, run_files.TRAIN_SUMMARY_DIR))
    self.eval_writer = tf.summary.create_file_writer(
        os.path.join(model_dir, run_files.EVAL_SUMMARY_DIR))
    self.predict = evaluation.make_predict_fn(run.evaluated_critic)
    self.subset = validation_subset(data, self.config.train.validation_subset_per_class)
    self.sample_noise = None
    if run.generator is not None:
      self.sample_noise = tf.random.stateless_normal(
          [64, run.generator.noise_dim],
          seed=random_streams.stream_seed(self.config.train.seed,
                                          random_streams.SAMPLE_NOISE, 0))
    self.interval_start, self.interval_first_step = time.time(), step
    self.wrote_operative_config = False

  def metrics(self, step, finished, now=None):
    """metrics.json's content at `step`; `now`: the time.time() its wall time ends at."""
    state, names = self.run.state, self.data.class_names
    per_class = {'best': class_results.of_variables(state.best, names),
                 'final': class_results.of_variables(state.latest, names)}
    content = reporting.metrics_content(self.latest, self.extra, state, self.examples, step,
                                        self.length.total_steps, finished, per_class)
    content['class_names'] = list(self.data.class_names)
    now = time.time() if now is None else now
    if self.wall_before is not None:
      content['wall_seconds'] = self.wall_before + now - self.started
    split = wall_time.add(self.split_before, self.split.read(now))
    if split is not None:
      content['wall_split'] = split
    return content

  def set_learning_rates(self, step):
    train = self.config.train
    if (train.learning_rate_halving_epochs is None and
        train.learning_rate_linear_decay_start is None):
      return
    factor = optimizers.learning_rate_factor(
        step, self.length.total_steps, self.length.epoch(step),
        train.learning_rate_halving_epochs, train.learning_rate_linear_decay_start)
    self.run.critic_optimizer.learning_rate.assign(self.config.critic_rate * factor)
    if self.run.generator_optimizer is not None:
      self.run.generator_optimizer.learning_rate.assign(self.config.generator_rate * factor)

  @_charged_to('checkpoints')
  def write_operative_config_once(self):
    if not self.wrote_operative_config:
      run_record.write_operative_config(self.model_dir, self.config)
      self.wrote_operative_config = True

  def check_finite(self, step):
    """TrainingDivergedError (after writing it to metrics.json) once a loss was NaN/Inf."""
    if not int(self.run.state.counters['nonfinite'].numpy()):
      return
    run_files.write_metrics(self.model_dir, {**self.metrics(step, finished=False),
                                             'diverged_before_step': step})
    manager = self.run.manager
    kept = (f'the last good checkpoint in {manager.directory} ({manager.latest_checkpoint}) '
            'was left intact' if manager.latest_checkpoint else
            'no checkpoint had been written yet')
    raise errors.TrainingDivergedError(
        f'a loss became NaN or Inf before step {step}; training stopped and {kept}. '
        'Lower the learning rates or check the constraint weights (ρ, λ_GP).')

  @_charged_to('evaluation')
  def evaluate(self, step, last):
    """The validation error and the labeled-set error; a new best saves the best critic.
    The test error is computed only where it can be reported: at a new best validation
    error, at the last step, and at every evaluation of a run without a validation split."""
    self.check_finite(step)
    data, best = self.data, self.run.state.best
    val_error = val_confusion = None
    if len(data.validation_labels):
      val_confusion = self.confusion(data.validation_images, data.validation_labels)
      val_error = class_results.error(val_confusion)
    # The labeled images the critic trains on: how well it fits them (underfitting shows
    # here, docs/algorithm.md#data-and-model-selection).
    labeled_error = evaluation.error_rate(self.predict, data.labeled_images,
                                          data.labeled_labels, self.config.train.eval_batch_size)
    # Model selection uses the validation split only
    # (docs/algorithm.md#data-and-model-selection); without one there is no best.
    improved = val_error is not None and lower_error(val_error, best['validation_error'])
    test_error = test_confusion = None
    if improved or last or val_error is None or self.config.train.test_every_evaluation:
      test_error, test_confusion = self.test_error()
    if improved:
      best['validation_error'].assign(val_error)
      best['test_error'].assign(math.nan if test_error is None else test_error)
      best['labeled_error'].assign(labeled_error)
      best['step'].assign(step)
      _assign_confusions(best, validation=val_confusion, test=test_confusion)
      with self.split.charged_to('checkpoints'):
        self.run.best_manager.save(checkpoint_number=step)
      fault_injection.reach('best_written')
    scalars = {} if test_error is None else {'eval/test_error': test_error}
    if val_error is not None:
      scalars['eval/validation_error'] = val_error
    scalars['eval/labeled_error'] = labeled_error
    if self.subset is not None:
      scalars['eval/validation_subset_error'] = evaluation.error_rate(
          self.predict, *self.subset, self.config.train.eval_batch_size)
    tensorboard.write_scalars(self.eval_writer, step, scalars)
    self._write_class_results(step, validation=val_confusion, test=test_confusion)
    self._set_latest({'step': step, 'validation_error': val_error, 'test_error': test_error,
                      'labeled_error': labeled_error},
                     validation=val_confusion, test=test_confusion)

  def _set_latest(self, latest, **confusions):
    """The latest evaluation, in metrics.json's `final` and in the checkpointed run state,
    with the confusion matrices of the splits given (None: not computed)."""
    self.latest = latest
    for key, value in latest.items():
      self.run.state.latest[key].assign(math.nan if value is None else value)
    _assign_confusions(self.run.state.latest, **confusions)

  def confusion(self, images, labels):
    return evaluation.confusion_matrix(self.predict, images, labels, self.data.num_classes,
                                       self.config.train.eval_batch_size)

  def test_error(self):
    """The test error in % and its confusion matrix; None, None without a test split (an
    image folder without test/)."""
    if not len(self.data.test_labels):
      return None, None
    confusion = self.confusion(self.data.test_images, self.data.test_labels)
    return class_results.error(confusion), confusion

  def _write_class_results(self, step, **confusions):
    """TensorBoard's per-class results of each split evaluated (`confusions`: its matrix, or
    None): `eval/<split>_balanced_error`, `class_error/<split>/<class name>` and the matrix
    as an image, `confusion/<split>`."""
    names = [_tag(name) for name in self.data.class_names]
    with self.eval_writer.as_default(step=step):
      for split, confusion in confusions.items():
        if confusion is None:
          continue
        balanced = class_results.balanced_error(confusion)
        if balanced is not None:
          tf.summary.scalar(f'eval/{split}_balanced_error', balanced)
        for name, error in zip(names, class_results.class_errors(confusion)):
          if error is not None:
            tf.summary.scalar(f'class_error/{split}/{name}', error)
        tf.summary.image(f'confusion/{split}', class_results.image(confusion))
    self.eval_writer.flush()

  @_charged_to('evaluation')
  def complete_last_evaluation(self, step):
    """The test error of an early stop's last evaluation, which did not improve."""
    if self.latest['test_error'] is None and len(self.data.test_labels):
      test_error, test_confusion = self.test_error()
      tensorboard.write_scalars(self.eval_writer, step, {'eval/test_error': test_error})
      self._write_class_results(step, test=test_confusion)
      # Only the test split's matrix is new: the validation one stays in the state.
      self._set_latest({**self.latest, 'test_error': test_error}, test=test_confusion)

  @_charged_to('checkpoints')
  def write_samples(self, step):
    if self.run.generator is None:
      return
    grid = tensorboard.image_grid(
        tf.cast(self.run.generator(self.sample_noise, training=False), tf.float32))
    with self.writer.as_default(step=step):
      tf.summary.image('generator_samples', grid)

  def _scalars(self, values, seconds):
    """TensorBoard's scalars of a log step: the step's values and the run's state."""
    run = self.run
    scalars = {k: float(v) for k, v in values.items()}
    scalars.update({f'lambda/{k}': float(v.numpy()) for k, v in run.state.multipliers.items()})
    scalars['norm/v'] = float(tf.norm(run.critic.v_variables[0]))
    scalars['norm/S'] = float(tf.norm(run.critic.s_head.kernel))
    scalars['time/step_seconds'] = seconds
    scalars['images_per_second'] = self.length.images_per_step / seconds
    scalars['learning_rate/critic'] = float(run.critic_optimizer.learning_rate.numpy())
    if run.generator_optimizer is not None:
      scalars['learning_rate/generator'] = float(
          run.generator_optimizer.learning_rate.numpy())
    scalars.update(self.config.algorithm.state_scalars(
        self.config.algorithm_settings, run.state.counters['critic_updates']))
    return scalars

  @_charged_to('checkpoints')
  def log(self, step, values):
    """TensorBoard scalars and the progress line, timed since the previous line."""
    self.check_finite(step)
    length = self.length
    seconds = (time.time() - self.interval_start) / (step - self.interval_first_step)
    scalars = self._scalars(values, seconds)
    tensorboard.write_scalars(self.writer, step, scalars)
    shown = {k: v for k, v in scalars.items()
             if k in progress.SHOWN or k.startswith(('omega/', 'lambda/'))}
    print(progress.progress_line(step, length.total_steps, length.epoch(step),
                                 scalars['images_per_second'],
                                 seconds * (length.total_steps - step), shown,
                                 self.latest['validation_error']), flush=True)
    self.interval_start, self.interval_first_step = time.time(), step

  def patience_ran_out(self, step):
    """Whether to stop early at this step (written to metrics.json, announced)."""
    patience = self.config.train.early_stopping_patience
    best_step = int(self.run.state.best['step'].numpy())
    if not (patience is not None and best_step >= 0
            and step >= self.config.train.early_stopping_min_steps
            and step - best_step >= patience):
      return False
    self.extra['stopped_early'] = step
    print(f'Stopping early at step {step}: no validation improvement since step '
          f'{best_step} (patience {patience})', flush=True)
    return True

  @_charged_to('checkpoints')
  def save(self, step, finished, extra=False):
    """A training checkpoint at `step` and metrics.json. `extra`: a checkpoint outside the
    `checkpoint_every` schedule (SIGTERM), not counted in the checkpoint's save_counter."""
    self.check_finite(step)
    # The summaries up to this step reach the disk before the checkpoint a rerun resumes
    # from: a killed trainer's unflushed ones are not written again.
    self.writer.flush()
    self.eval_writer.flush()
    if extra:
      self.run.manager.checkpoint.save_counter.assign_add(-1)
    self.run.manager.save(checkpoint_number=step)
    fault_injection.reach('checkpoint_written')
    run_files.write_metrics(self.model_dir, self.metrics(step, finished))


def lower_error(error, best_error) -> bool:
  """Whether `error` (%) is below the best one, a float32 variable: compared as the stored
  values, both rounded to float32, so an error equal to the best (the same count of images
  wrong) never replaces it and the earliest of tied steps stays the best. Compared as
  float64 against the stored float32 instead, an equal error won or lost a tie by that
  value's rounding."""
  return bool(np.float32(error) < np.float32(best_error.numpy()))


def validation_subset(data, per_class):
  """(images, labels) of the validation split's first `per_class` images of each class, kept
  in the split's order (drawn with the label split's seed: ssl_data); all of a class's
  images where it has fewer. None when per_class is None."""
  if per_class is None:
    return None
  labels = np.asarray(data.validation_labels)
  chosen = np.sort(np.concatenate(
      [np.flatnonzero(labels == c)[:per_class] for c in range(data.num_classes)]))
  return data.validation_images[chosen], labels[chosen]


def _assign_confusions(variables, **confusions):
  """Assigns each split's confusion matrix (None: not computed, -1 everywhere) to its
  run-state variable `<split>_confusion` of `variables` (run.RunState's best or latest)."""
  for split, confusion in confusions.items():
    variable = variables[f'{split}_confusion']
    variable.assign(tf.fill(variable.shape, tf.constant(-1, variable.dtype))
                    if confusion is None else confusion)


def _tag(class_name):
  """A class name as a TensorBoard tag's last part (no '/', which would nest it)."""
  return re.sub(r'[^A-Za-z0-9_.\-]+', '_', class_name)


def train_loop(loop, algorithm, streams, step, sigterm, training_done):
  """Trains from `step` to the end (or an early stop): each step is one
  `algorithm.train_step(*streams)` (the run's algorithms.Algorithm on the distributed
  iterators it reads). Returns the last step (see the module doc for Ctrl-C and SIGTERM)."""
  length, every = loop.length, loop.config.train
  export = every.export_classifier
  try:
    while step < length.total_steps and not training_done:
      if sigterm.requested:  # Before this process's first step: nothing new to save.
        raise errors.Terminated(
            f'terminated (SIGTERM) before step {step + 1}; nothing new to save (latest '
            f'checkpoint: {loop.run.manager.latest_checkpoint or "none yet"}): rerun the same '
            'command to resume')
      loop.set_learning_rates(step)
      values = algorithm.train_step(*streams)
      loop.split.switch('training')  # The session's first step ends its start-up.
      step += 1
      loop.write_operative_config_once()
      last = step == length.total_steps
      # Evaluate first: the progress line then shows this step's validation error, and its
      # time per step (and ETA) includes the evaluations.
      if step % every.eval_every == 0 or last:
        loop.evaluate(step, last)
      if step % every.sample_every == 0 or last:
        loop.write_samples(step)
      if step % every.log_every == 0 or last:
        loop.log(step, values)
      stop = step % every.eval_every == 0 and not last and loop.patience_ran_out(step)
      if stop:
        loop.complete_last_evaluation(step)
      saved = step % every.checkpoint_every == 0 or last or stop
      if saved:  # Finished only once the export is complete (trainer).
        loop.save(step, finished=(last or stop) and not export)
      if stop:
        break
      if sigterm.requested and not last:
        if not saved:
          loop.save(step, finished=False, extra=True)
        raise errors.Terminated(
            f'terminated (SIGTERM) at step {step}; checkpoint '
            f'{loop.run.manager.latest_checkpoint} written: rerun the same command to resume')
  except KeyboardInterrupt:
    kept = loop.run.manager.latest_checkpoint or 'none yet'
    raise errors.Interrupted(
        f'interrupted at step {step}; rerun the same command to resume (latest checkpoint: '
        f'{kept})') from None
  return step
