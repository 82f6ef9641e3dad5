"""The semi-supervised IPM GAN (train.mode = 'ssl'; docs/algorithm.md#training-loop).

One iteration = n_c critic iterations (each with fresh labeled, unlabeled and noise batches;
optimizer step; multiplier update λ ← λ + ρ·Ω with the Ω of that step; each constraint's
after-update hook, e.g. weight clipping) followed by one generator iteration. Ω is formed
from all-reduced moments, so the multiplier updates and the hooks run in cross-replica
context with values identical on every replica. An epoch is a pass over the unlabeled set.
"""
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint as constraint_lib
from tf_ipmssl.objectives import critic_objective as critic_objective_lib
from tf_ipmssl.objectives import global_moments
from tf_ipmssl.objectives import ipm_rampup
from tf_ipmssl.objectives import weight_decay
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import random_streams
from tf_ipmssl.training import steps as steps_lib


@algorithms.register
class SemiSupervised(algorithms.Algorithm):
  """The critic's n_c updates and the generator's one (see the module doc)."""
  name = 'ssl'
  trains_generator = True
  reads = ('labeled', 'unlabeled')
  epoch_set = 'unlabeled'

  @classmethod
  def constraints(cls, formulation, constraints):
    return constraint_lib.validate_constraints(formulation, constraints)

  @classmethod
  def iterations_per_step(cls, critic_iterations):
    return critic_iterations

  @classmethod
  def check_data(cls, data):
    if len(data.labeled_images) == 0:
      raise errors.ConfigError('SSL training needs labeled examples '
                               '(build_ssl_data.num_labeled)')

  def __init__(self, config, **run_pieces):
    super().__init__(config, **run_pieces)
    self.noise_dim = int(self.generator.noise_dim)
    self.critic_decays = weight_decay.critic_weight_decays(
        self.critic, self.objective.weight_decay_phi_s, self.objective.weight_decay_v)
    self._critic_gradients = self.compile_piece(self._critic_gradients_impl)
    self._generator_gradients = self.compile_piece(self._generator_gradients_impl)

  # ----- per-replica gradient computations (optionally XLA-compiled) -----

  def _noise(self, stream, counter, local_b):
    return random_streams.global_normal_slice(
        self.run.loop.batch_size, self.noise_dim,
        random_streams.stream_seed(self.run.numerics.seed, stream, counter), local_b)

  def _critic_gradients_impl(self, x_labeled, y_labeled, x_real, iteration):
    z = self._noise(random_streams.CRITIC_NOISE, iteration, tf.shape(x_real)[0])
    x_fake = tf.stop_gradient(tf.cast(self.generator(z, training=True), tf.float32))
    context = tf.distribute.get_replica_context()
    alpha_seed = tf.random.experimental.stateless_fold_in(
        random_streams.stream_seed(self.run.numerics.seed, random_streams.GP_ALPHA, iteration),
        context.replica_id_in_sync_group if context else 0)
    variables = self.critic.trainable_variables
    objective = self.objective
    with tf.GradientTape() as tape:
      result = critic_objective_lib.critic_objective(
          self.critic, x_labeled, y_labeled, x_real, x_fake,
          formulation=objective.formulation, constraints=objective.constraints,
          multipliers=self.multipliers, lambda_ce=objective.lambda_ce,
          global_batch_size=self.run.loop.batch_size,
          reference_pairwise_f=objective.reference_pairwise_f, alpha_seed=alpha_seed,
          ipm_weight=ipm_rampup.rampup_weight(iteration, objective.ipm_rampup_updates),
          all_reduce_sum=global_moments.replica_all_reduce_sum, training=True,
          forward=self.config.critic_forward)
      loss = self.scaled(self.critic_optimizer, result.surrogate_loss)
    grads = tape.gradient(loss, variables)
    grads = self.with_decay(self.critic_optimizer, grads, variables, self.critic_decays)
    return grads, result.values, result.omegas

  def _generator_gradients_impl(self, step, local_b, x_real):
    z = self._noise(random_streams.GENERATOR_NOISE, step, local_b)
    variables = self.generator.trainable_variables
    with tf.GradientTape() as tape:
      x_fake = tf.cast(self.generator(z, training=True), tf.float32)
      # The logged value is summed back over replicas (generator_replica_step).
      surrogate, loss = self.objective.generator_loss(
          self.critic, x_real, x_fake, formulation=self.objective.formulation,
          global_batch_size=self.run.loop.batch_size,
          num_replicas=self.strategy.num_replicas_in_sync,
          all_reduce_sum=global_moments.replica_all_reduce_sum)
      scaled = self.scaled(self.generator_optimizer, surrogate)
    grads = tape.gradient(scaled, variables)
    return grads, loss

  # ----- replica steps -----

  def _critic_replica_step(self, x_labeled, y_labeled, x_real, iteration):
    grads, values, omegas = self._critic_gradients(x_labeled, y_labeled, x_real, iteration)
    self.critic_optimizer.apply_gradients(zip(grads, self.critic.trainable_variables))
    values = dict(values, **{'grad_norm/critic': steps_lib.global_norm(grads)})
    return values, omegas

  def generator_replica_step(self, step, x_real):
    """One generator update in a replica's context (the benchmark times it alone)."""
    local_b = self.run.loop.batch_size // self.strategy.num_replicas_in_sync
    grads, loss = self._generator_gradients(step, local_b, x_real)
    self.generator_optimizer.apply_gradients(zip(grads, self.generator.trainable_variables))
    return {'generator_loss': global_moments.replica_all_reduce_sum(loss),
            'grad_norm/generator': steps_lib.global_norm(grads)}

  # ----- the iteration (cross-replica context) -----

  def _critic_iteration(self, labeled_iterator, unlabeled_iterator):
    """One critic update, its multipliers and hooks; returns (values, the real batch)."""
    x_labeled, y_labeled = next(labeled_iterator)
    x_real = next(unlabeled_iterator)
    iteration = self.counters['critic_iteration'].read_value()
    per_replica_values, per_replica_omegas = self.strategy.run(
        self._critic_replica_step, args=(x_labeled, y_labeled, x_real, iteration))
    # Ω and the logged values come from all-reduced moments: identical on every replica.
    omegas = self.first_replica(per_replica_omegas)
    for constraint in self.objective.constraints:
      constraint.update_multiplier(self.multipliers.get(constraint.name),
                                   omegas.get(constraint.name))
    for constraint in self.objective.constraints:  # E.g. weight clipping.
      constraint.after_update(self.critic)
    self.count_critic_update()
    values = self.first_replica(per_replica_values)
    values['grad_norm/critic'] = self.strategy.reduce(
        tf.distribute.ReduceOp.MEAN, per_replica_values['grad_norm/critic'], axis=None)
    return values, x_real

  def train_iteration(self, labeled_iterator, unlabeled_iterator):
    values = {}
    for _ in range(self.config.critic_iterations):
      values, x_real = self._critic_iteration(labeled_iterator, unlabeled_iterator)
    # Feature matching compares with the last critic iteration's real batch (no extra draw).
    generator_values = self.strategy.run(
        self.generator_replica_step, args=(self.counters['step'].read_value(), x_real))
    values.update(self.first_replica(generator_values))
    return self.end_iteration(values)
