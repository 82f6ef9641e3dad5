"""What every algorithm's training iterations share, run under a tf.distribute strategy.

`TrainingSteps` is the base of the algorithms (algorithms.py): it holds a run's networks,
optimizers, multipliers and counters, and the pieces every iteration uses — the optional XLA
compilation of a replica's gradient computation, loss scaling, coupled weight decay, the
weight average, the step counter and the non-finite check. Each algorithm writes its own
iteration (`train_iteration`) from these; `iteration` is its compiled form. Tapes and
optimizer calls run inside `strategy.run`; whatever updates variables shared by the replicas
runs in cross-replica context with values identical on every replica.
"""
import dataclasses
from typing import Any

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import critic_objective as critic_objective_lib
from tf_ipmssl.objectives import global_moments
from tf_ipmssl.objectives import weight_decay
from tf_ipmssl.training import weight_averaging


def global_norm(tensors):
  return tf.linalg.global_norm([t for t in tensors if t is not None])


@dataclasses.dataclass(frozen=True)
class StepConfig:
  """What a run's training iterations compute: its run_config.RunConfig, and how the
  iterations are run. Every setting of the run is read from `run` or `settings`, never
  restated here; `of` derives the configuration, the benchmark changes the last two fields.

  Attributes:
    run: the RunConfig (batch, seed, weight decays, XLA, loss scaling, weight average, the
      constraints the algorithm uses).
    settings: the algorithm's settings (the run's `objective.settings`; the benchmark
      changes ssl's critic_iterations).
    critic_forward: how the critic objective passes the batches through the critic: 'auto'
      (separate passes iff the critic has batch norm), 'batched' or 'separate'
      (critic_objective.is_batched).
  """
  run: Any
  settings: Any
  critic_forward: str

  @classmethod
  def of(cls, run, **changes) -> 'StepConfig':
    """The step configuration of RunConfig `run`; `changes`: settings or critic_forward
    (the benchmark's variants)."""
    return dataclasses.replace(cls(run, run.objective.settings, 'auto'), **changes)


class TrainingSteps:
  """A run's networks and state, and the pieces its algorithm's iterations share.

  Subclasses (the algorithms) define `train_iteration(*iterators)`, one training iteration
  in cross-replica context on the distributed iterators of their `streams`; they compile
  their per-replica gradient computations with `compile_piece`.
  """

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
    if config.run.loop.batch_size % strategy.num_replicas_in_sync:
      raise errors.ConfigError(
          f'the batch size {config.run.loop.batch_size} does not split evenly over '
          f'{strategy.num_replicas_in_sync} replicas; choose a multiple of the replica count')
    critic_objective_lib.is_batched(critic, config.critic_forward)  # ValueError if it can't.
    self.config = config
    self.run, self.objective = config.run, config.run.objective
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
    self.jit_compile = config.run.numerics.jit_compile and strategy.num_replicas_in_sync == 1
    self.iteration = tf.function(self.train_iteration)

  def train_iteration(self, *iterators):
    """One training iteration on the distributed iterators; returns the logged values."""
    raise NotImplementedError

  def compile_piece(self, fn):
    """`fn` (a replica's gradient computation) XLA-compiled when the run asks for it."""
    return tf.function(fn, jit_compile=True) if self.jit_compile else fn

  # ----- in a replica's context -----

  def scaled(self, optimizer, loss):
    return optimizer.scale_loss(loss) if self.run.numerics.loss_scaling else loss

  def with_decay(self, optimizer, grads, variables, decays):
    replicas = self.strategy.num_replicas_in_sync
    scale = optimizer.scale_loss(1.0) if self.run.numerics.loss_scaling else 1.0
    decays = [d * scale for d in decays]
    return weight_decay.add_coupled_weight_decay(grads, variables, decays, replicas)

  def labeled_cross_entropy(self, x_labeled, y_labeled):
    """The classifier's mean cross-entropy and accuracy on a replica's labeled batch (each
    summed over the replica's examples, divided by the global batch)."""
    logits = tf.cast(self.critic.classify(x_labeled, training=True), tf.float32)
    labels = tf.cast(y_labeled, tf.int32)
    batch = self.run.loop.batch_size
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
      weight_averaging.update_average(self.average_pairs, self.run.numerics.critic_ema_decay,
                                      self.counters['critic_iteration'].read_value())

  def end_iteration(self, values):
    """After an iteration: the step counter, and a non-finite value of `values` counted."""
    self.counters['step'].assign_add(1)
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(tf.cast(v, tf.float32)))
                            for v in tf.nest.flatten(values)])
    self.counters['nonfinite'].assign_add(tf.cast(tf.logical_not(finite), tf.int64))
    return values
