"""The compiled training iterations, run under a tf.distribute strategy.

See docs/algorithm.md#training-loop.

One SSL iteration = n_c critic iterations (each with fresh labeled, unlabeled and noise
batches; optimizer step; multiplier update λ ← λ + ρ·Ω with the Ω of that step; each
constraint's after-update hook, e.g. weight clipping) followed by one generator iteration.
Tapes and optimizer calls run inside `strategy.run`; multiplier updates and the hooks run in
cross-replica context with values that are identical on every replica (Ω is formed from
all-reduced moments).
"""
import dataclasses
from typing import Any

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import critic_objective as critic_objective_lib
from tf_ipmssl.objectives import generator_objective as generator_objective_lib
from tf_ipmssl.objectives import global_moments
from tf_ipmssl.objectives import ipm_rampup
from tf_ipmssl.objectives import weight_decay
from tf_ipmssl.training import random_streams
from tf_ipmssl.training import weight_averaging


_IPM_LOSS = generator_objective_lib.IPMGeneratorLoss()


def _global_norm(tensors):
  return tf.linalg.global_norm([t for t in tensors if t is not None])


@dataclasses.dataclass(frozen=True)
class StepConfig:
  """What a run's training iterations compute: its run_config.RunConfig, and how the
  iterations are run. Every setting of the run is read from `run`, never restated here;
  `of` derives the configuration, the benchmark changes the last two fields.

  Attributes:
    run: the RunConfig (formulation, constraints, λ_CE, batch, seed, weight decays, XLA,
      loss scaling, weight average, IPM ramp-up, generator loss).
    critic_iterations: n_c critic iterations per generator iteration (the run's).
    critic_forward: how the critic objective passes the batches through the critic: 'auto'
      (separate passes iff the critic has batch norm), 'batched' or 'separate'
      (critic_objective.is_batched).
  """
  run: Any
  critic_iterations: int
  critic_forward: str

  @classmethod
  def of(cls, run, **changes) -> 'StepConfig':
    """The step configuration of RunConfig `run`; `changes`: critic_iterations or
    critic_forward (the benchmark's variants)."""
    return dataclasses.replace(cls(run, run.loop.critic_iterations, 'auto'), **changes)


class TrainingSteps:
  """Builds the per-replica steps and the compiled iterations for one run."""

  def __init__(self, config, *, strategy, critic, generator, critic_optimizer,
               generator_optimizer, multipliers, counters, averaged_critic=None):
    """Args:
      config: the StepConfig of the run.
      strategy: the tf.distribute strategy the networks were built under.
      critic, generator: the networks; optimizers: their (built) optimizers.
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
    self.strategy = strategy
    self.critic = critic
    self.generator = generator
    self.critic_optimizer = critic_optimizer
    self.generator_optimizer = generator_optimizer
    self.multipliers = multipliers
    self.counters = counters
    self.noise_dim = int(generator.noise_dim)
    self.critic_decays = weight_decay.critic_weight_decays(
        critic, self.objective.weight_decay_phi_s, self.objective.weight_decay_v)
    self.supervised_decays = ([self.objective.weight_decay_phi_s] *
                              len(critic.phi_and_s_variables))
    self.average_pairs = (weight_averaging.averaged_pairs(critic, averaged_critic)
                          if averaged_critic is not None else None)
    # XLA compiles the forward/backward computation of one replica. All-reduces (global
    # moments, synchronized batch norm) cannot sit in a nested tf.function under several
    # replicas, so XLA is used on one replica only; otherwise the pieces are traced inline.
    self.jit_compile = config.run.numerics.jit_compile and strategy.num_replicas_in_sync == 1
    compile_piece = ((lambda fn: tf.function(fn, jit_compile=True)) if self.jit_compile
                     else (lambda fn: fn))
    self._critic_gradients = compile_piece(self._critic_gradients_impl)
    self._generator_gradients = compile_piece(self._generator_gradients_impl)
    self._supervised_gradients = compile_piece(self._supervised_gradients_impl)
    self.ssl_iteration = tf.function(self._ssl_iteration)
    self.supervised_iteration = tf.function(self._supervised_iteration)

  # ----- per-replica gradient computations (optionally XLA-compiled) -----

  def _scaled(self, optimizer, loss):
    return optimizer.scale_loss(loss) if self.run.numerics.loss_scaling else loss

  def _with_decay(self, optimizer, grads, variables, decays):
    replicas = self.strategy.num_replicas_in_sync
    scale = optimizer.scale_loss(1.0) if self.run.numerics.loss_scaling else 1.0
    decays = [d * scale for d in decays]
    return weight_decay.add_coupled_weight_decay(grads, variables, decays, replicas)

  def _critic_gradients_impl(self, x_labeled, y_labeled, x_real, iteration):
    local_b = tf.shape(x_real)[0]
    z = random_streams.global_normal_slice(
        self.run.loop.batch_size, self.noise_dim,
        random_streams.stream_seed(self.run.numerics.seed, random_streams.CRITIC_NOISE, iteration), local_b)
    x_fake = tf.stop_gradient(tf.cast(self.generator(z, training=True), tf.float32))
    context = tf.distribute.get_replica_context()
    alpha_seed = tf.random.experimental.stateless_fold_in(
        random_streams.stream_seed(self.run.numerics.seed, random_streams.GP_ALPHA, iteration),
        context.replica_id_in_sync_group if context else 0)
    variables = self.critic.trainable_variables
    with tf.GradientTape() as tape:
      result = critic_objective_lib.critic_objective(
          self.critic, x_labeled, y_labeled, x_real, x_fake,
          formulation=self.objective.formulation, constraints=self.objective.constraints,
          multipliers=self.multipliers, lambda_ce=self.objective.lambda_ce,
          global_batch_size=self.run.loop.batch_size,
          reference_pairwise_f=self.objective.reference_pairwise_f, alpha_seed=alpha_seed,
          ipm_weight=ipm_rampup.rampup_weight(iteration, self.objective.ipm_rampup_updates),
          all_reduce_sum=global_moments.replica_all_reduce_sum, training=True,
          forward=self.config.critic_forward)
      loss = self._scaled(self.critic_optimizer, result.surrogate_loss)
    grads = tape.gradient(loss, variables)
    grads = self._with_decay(self.critic_optimizer, grads, variables, self.critic_decays)
    return grads, result.values, result.omegas

  def _generator_gradients_impl(self, step, local_b, x_real):
    z = random_streams.global_normal_slice(
        self.run.loop.batch_size, self.noise_dim,
        random_streams.stream_seed(self.run.numerics.seed, random_streams.GENERATOR_NOISE, step), local_b)
    variables = self.generator.trainable_variables
    with tf.GradientTape() as tape:
      x_fake = tf.cast(self.generator(z, training=True), tf.float32)
      # The logged value is summed back over replicas (generator_replica_step).
      surrogate, loss = self.objective.generator_loss(
          self.critic, x_real, x_fake, formulation=self.objective.formulation,
          global_batch_size=self.run.loop.batch_size,
          num_replicas=self.strategy.num_replicas_in_sync,
          all_reduce_sum=global_moments.replica_all_reduce_sum)
      scaled = self._scaled(self.generator_optimizer, surrogate)
    grads = tape.gradient(scaled, variables)
    return grads, loss

  def _supervised_gradients_impl(self, x_labeled, y_labeled):
    variables = self.critic.phi_and_s_variables
    with tf.GradientTape() as tape:
      logits = tf.cast(self.critic.classify(x_labeled, training=True), tf.float32)
      ce = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=tf.cast(y_labeled, tf.int32), logits=logits)) / self.run.loop.batch_size
      accuracy = tf.reduce_sum(tf.cast(tf.equal(
          tf.argmax(logits, -1, output_type=tf.int32), tf.cast(y_labeled, tf.int32)),
                                       tf.float32)) / self.run.loop.batch_size
      loss = self._scaled(self.critic_optimizer, ce)
    grads = tape.gradient(loss, variables)
    grads = self._with_decay(self.critic_optimizer, grads, variables, self.supervised_decays)
    return grads, ce, accuracy

  # ----- replica steps -----

  def _critic_replica_step(self, x_labeled, y_labeled, x_real, iteration):
    grads, values, omegas = self._critic_gradients(x_labeled, y_labeled, x_real, iteration)
    self.critic_optimizer.apply_gradients(zip(grads, self.critic.trainable_variables))
    values = dict(values, **{'grad_norm/critic': _global_norm(grads)})
    return values, omegas

  def generator_replica_step(self, step, x_real):
    """One generator update in a replica's context (the benchmark times it alone)."""
    local_b = self.run.loop.batch_size // self.strategy.num_replicas_in_sync
    grads, loss = self._generator_gradients(step, local_b, x_real)
    self.generator_optimizer.apply_gradients(zip(grads, self.generator.trainable_variables))
    return {'generator_loss': global_moments.replica_all_reduce_sum(loss),
            'grad_norm/generator': _global_norm(grads)}

  def _supervised_replica_step(self, x_labeled, y_labeled):
    grads, ce, accuracy = self._supervised_gradients(x_labeled, y_labeled)
    self.critic_optimizer.apply_gradients(zip(grads, self.critic.phi_and_s_variables))
    ce, accuracy = global_moments.replica_all_reduce_sum((ce, accuracy))
    return {'ce': ce, 'labeled_accuracy': accuracy, 'grad_norm/critic': _global_norm(grads)}

  # ----- compiled iterations (cross-replica context) -----

  def _first_replica(self, values):
    return tf.nest.map_structure(
        lambda v: self.strategy.experimental_local_results(v)[0], values)

  def _mark_nonfinite(self, values):
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(tf.cast(v, tf.float32)))
                            for v in tf.nest.flatten(values)])
    self.counters['nonfinite'].assign_add(tf.cast(tf.logical_not(finite), tf.int64))

  def _ssl_iteration(self, labeled_iterator, unlabeled_iterator):
    values = {}
    for _ in range(self.config.critic_iterations):
      x_labeled, y_labeled = next(labeled_iterator)
      x_real = next(unlabeled_iterator)
      iteration = self.counters['critic_iteration'].read_value()
      per_replica_values, per_replica_omegas = self.strategy.run(
          self._critic_replica_step, args=(x_labeled, y_labeled, x_real, iteration))
      # Ω and the logged values come from all-reduced moments: identical on every replica.
      omegas = self._first_replica(per_replica_omegas)
      for constraint in self.objective.constraints:
        constraint.update_multiplier(self.multipliers.get(constraint.name),
                                     omegas.get(constraint.name))
      for constraint in self.objective.constraints:  # E.g. weight clipping.
        constraint.after_update(self.critic)
      self.counters['critic_iteration'].assign_add(1)
      self._update_average()
      values = self._first_replica(per_replica_values)
      values['grad_norm/critic'] = self.strategy.reduce(
          tf.distribute.ReduceOp.MEAN, per_replica_values['grad_norm/critic'], axis=None)
    # Feature matching compares with the last critic iteration's real batch (no extra draw).
    generator_values = self.strategy.run(
        self.generator_replica_step, args=(self.counters['step'].read_value(), x_real))
    values.update(self._first_replica(generator_values))
    self.counters['step'].assign_add(1)
    self._mark_nonfinite(values)
    return values

  def _supervised_iteration(self, labeled_iterator):
    x_labeled, y_labeled = next(labeled_iterator)
    values = self._first_replica(self.strategy.run(self._supervised_replica_step,
                                                   args=(x_labeled, y_labeled)))
    self.counters['critic_iteration'].assign_add(1)
    self._update_average()
    self.counters['step'].assign_add(1)
    self._mark_nonfinite(values)
    return values

  def _update_average(self):
    if self.average_pairs is not None:
      weight_averaging.update_average(self.average_pairs, self.run.numerics.critic_ema_decay,
                                      self.counters['critic_iteration'].read_value())
