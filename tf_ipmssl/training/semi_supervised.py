"""The semi-supervised IPM GAN (train.mode = 'ssl'; docs/algorithm.md#training-loop).

One step = n_c critic updates (each with fresh labeled, unlabeled and noise batches; the
optimizer's update; multiplier update λ ← λ + ρ·Ω with the Ω of that update; each
constraint's after-update hook, e.g. weight clipping) followed by one generator update. Ω
is formed from all-reduced moments, so the multiplier updates and the hooks run in
cross-replica context with values identical on every replica. An epoch is a pass over the unlabeled set.

The class's methods after its settings read in the order of the computation:

  _noise                     N(0, I) noise for the global batch, this replica's rows
  _critic_gradients_impl     a replica's critic gradients: the generated batch, the critic
                             objective (objectives/critic_objective.py), ∇ and weight decay
  _critic_replica_update     the critic's optimizer update in a replica
  _critic_update             one critic update: the batches, the replicas' updates, the
                             multiplier updates and hooks, the update counter
  _generator_gradients_impl  a replica's generator gradients (objectives/generator_objective.py)
  generator_replica_update   the generator's optimizer update in a replica
  train_step                 the step (a tf.function) the training loop calls once per step

The pieces every algorithm shares (`compile_piece`, `gradients`, `first_replica`,
`count_critic_update`, `end_step`) are algorithms.Algorithm's.

Its settings (gin `ssl.*`, `SemiSupervised.Settings`):

  formulation: 'plain', 'kplus1' or 'kplus1_entropy' (docs/algorithm.md#formulations).
  constraints: e.g. [@Fisher(), @Sobolev()] (docs/algorithm.md#constraints, placement via
    `component`).
  lambda_ce: weight of the labeled cross-entropy (1.5 for K+1, 0.1 for plain).
  reference_pairwise_f: reproduce the released code's broadcast f
    (docs/algorithm.md#pairwise-f).
  critic_iterations: n_c, the critic updates per step (per generator update).
  generator_loss: 'ipm' (the paper: −E_Q f) or 'feature_matching' (an option:
    ‖E_P Φ − E_Q Φ‖², generator_objective.feature_matching_objective).
  ipm_rampup_updates: None (the paper), or T: the IPM term of the critic's loss is
    weighted by exp(−5 (1 − t/T)²) over the first T critic updates (ipm_rampup.py).
  constraint_penalty_scale: multiplies every augmented-Lagrangian penalty weight ρ (Fisher,
    Sobolev; not λ_GP or the clip value), keeping the ratios between them.
"""
import dataclasses
from typing import Optional

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint as constraint_lib
from tf_ipmssl.objectives import critic_objective as critic_objective_lib
from tf_ipmssl.objectives import formulations
from tf_ipmssl.objectives import generator_objective
from tf_ipmssl.objectives import global_moments
from tf_ipmssl.objectives import ipm_rampup
from tf_ipmssl.objectives import weight_decay
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import random_streams


class SemiSupervised(algorithms.Algorithm):
  """The critic's n_c updates and the generator's one (see the module doc)."""
  name = 'ssl'
  trains_generator = True
  splits_critic_gradient = True
  reads = ('labeled', 'unlabeled')
  epoch_set = 'unlabeled'

  @dataclasses.dataclass(frozen=True)
  class Settings:
    """The settings (see the module doc)."""
    formulation: str = 'kplus1'
    constraints: tuple = ()
    lambda_ce: float = 1.5
    reference_pairwise_f: bool = False
    critic_iterations: int = 2
    generator_loss: str = 'ipm'
    ipm_rampup_updates: Optional[int] = None
    constraint_penalty_scale: float = 1.0

    def __post_init__(self):
      """A ConfigError naming `ssl.<setting>` and the fix for a bad value or constraint set."""
      name = SemiSupervised.name
      if self.formulation not in formulations.FORMULATIONS:
        raise errors.ConfigError(f'{name}.formulation = {self.formulation!r} is not '
                                 f'one of {list(formulations.FORMULATIONS)}')
      for setting, integer, optional, lowest in (
          ('lambda_ce', False, False, 0.0), ('critic_iterations', True, False, 1),
          ('ipm_rampup_updates', True, True, 1), ('constraint_penalty_scale', False, False, 0.0)):
        errors.check_number(f'{name}.{setting}', getattr(self, setting), integer=integer,
                            low=lowest, optional=optional)
      generator_objective.get_generator_loss(self.generator_loss)
      constraint_lib.validate_constraints(self.formulation, self.constraints)

  @classmethod
  def constraints(cls, settings):
    """The constraints as bound (validated for the formulation when the settings were
    made), their penalty weights ρ scaled by constraint_penalty_scale."""
    return constraint_lib.scale_penalty_weights(tuple(settings.constraints),
                                                settings.constraint_penalty_scale)

  @classmethod
  def critic_updates_per_step(cls, settings):
    return settings.critic_iterations

  @classmethod
  def state_scalars(cls, settings, critic_updates):
    weight = ipm_rampup.rampup_weight(critic_updates, settings.ipm_rampup_updates)
    return {} if weight is None else {'ipm_weight': float(weight)}

  @classmethod
  def scaled_settings(cls, settings):
    scale = settings.constraint_penalty_scale
    if scale == 1.0:
      return ''
    rhos = ', '.join(f'{c.name} {c.penalty_weight:g}' for c in cls.constraints(settings)
                     if c.has_multiplier)
    return f'penalty weights x{scale:g}' + (f' (ρ: {rhos})' if rhos else '')

  @classmethod
  def check_data(cls, data):
    if len(data.labeled_images) == 0:
      raise errors.ConfigError('SSL training needs labeled examples '
                               '(build_ssl_data.num_labeled)')

  def __init__(self, run, strategy=None, **changes):
    super().__init__(run, strategy, **changes)
    self.noise_dim = int(run.generator.noise_dim)
    self.generator_loss = generator_objective.get_generator_loss(self.settings.generator_loss)
    self.critic_decays = weight_decay.critic_weight_decays(
        run.critic, self.run_config.train.weight_decay_phi_s,
        self.run_config.train.weight_decay_v)
    # A replica's gradient computations, XLA-compiled when the run asks for it.
    self._critic_gradients = self.compile_piece(self._critic_gradients_impl)
    self._generator_gradients = self.compile_piece(self._generator_gradients_impl)

  # ----- the critic: noise, objective, gradients and decay, update (in a replica) -----

  def _noise(self, stream, counter, local_batch_size):
    """N(0, I) noise of draw `counter` of `stream` (random_streams.py) for the whole global
    batch, and this replica's rows of it: the same numbers on any number of replicas."""
    noise = tf.random.stateless_normal(
        [self.run_config.train.batch_size, self.noise_dim],
        seed=random_streams.stream_seed(self.run_config.train.seed, stream, counter),
        alg='philox')
    context = tf.distribute.get_replica_context()
    replica_id = 0 if context is None else context.replica_id_in_sync_group
    start = tf.cast(replica_id, tf.int32) * local_batch_size
    return noise[start:start + local_batch_size]

  def _critic_gradients_impl(self, x_labeled, y_labeled, x_real, update):
    """A replica's critic gradients at critic update `update` (the number done before it;
    weight decay included), the logged values and Ω per multiplier constraint."""
    run, settings = self.run, self.settings
    z = self._noise(random_streams.CRITIC_NOISE, update, tf.shape(x_real)[0])
    x_fake = tf.stop_gradient(tf.cast(run.generator(z, training=True), tf.float32))
    # The gradient penalties' α: a draw of this replica's own.
    context = tf.distribute.get_replica_context()
    alpha_seed = tf.random.experimental.stateless_fold_in(
        random_streams.stream_seed(self.run_config.train.seed, random_streams.GP_ALPHA,
                                   update),
        context.replica_id_in_sync_group if context else 0)
    variables = run.critic.trainable_variables
    with tf.GradientTape() as tape:
      result = critic_objective_lib.critic_objective(
          run.critic, x_labeled, y_labeled, x_real, x_fake,
          formulation=settings.formulation, constraints=self.run_config.constraints,
          multipliers=run.state.multipliers, lambda_ce=settings.lambda_ce,
          global_batch_size=self.run_config.train.batch_size,
          reference_pairwise_f=settings.reference_pairwise_f, alpha_seed=alpha_seed,
          ipm_weight=ipm_rampup.rampup_weight(update, settings.ipm_rampup_updates),
          all_reduce_sum=global_moments.replica_all_reduce_sum, training=True,
          forward=self.critic_forward)
    grads = self.gradients(tape, result.surrogate_loss, variables, run.critic_optimizer,
                           self.critic_decays)
    return grads, result.values, result.omegas

  def _critic_replica_update(self, x_labeled, y_labeled, x_real, update):
    """A replica's critic update; its logged values (with the gradient norm) and Ω."""
    grads, values, omegas = self._critic_gradients(x_labeled, y_labeled, x_real, update)
    self.run.critic_optimizer.apply_gradients(zip(grads, self.run.critic.trainable_variables))
    values = dict(values, **{'grad_norm/critic': algorithms.global_norm(grads)})
    return values, omegas

  # ----- one critic update: the optimizer's, then multipliers and hooks (cross-replica) -----

  def _critic_update(self, labeled_iterator, unlabeled_iterator):
    """One critic update, its multipliers and hooks; returns (values, the real batch)."""
    x_labeled, y_labeled = next(labeled_iterator)
    x_real = next(unlabeled_iterator)
    state = self.run.state
    update = state.counters['critic_updates'].read_value()
    per_replica_values, per_replica_omegas = self.strategy.run(
        self._critic_replica_update, args=(x_labeled, y_labeled, x_real, update))
    # Ω and the logged values come from all-reduced moments: identical on every replica.
    values, omegas = self.first_replica((per_replica_values, per_replica_omegas))
    for constraint in self.run_config.constraints:
      constraint.update_multiplier(state.multipliers.get(constraint.name),
                                   omegas.get(constraint.name))
    for constraint in self.run_config.constraints:  # E.g. weight clipping.
      constraint.after_update(self.run.critic)
    self.count_critic_update()
    # Each replica's own gradient norm: their mean.
    values['grad_norm/critic'] = self.strategy.reduce(
        tf.distribute.ReduceOp.MEAN, per_replica_values['grad_norm/critic'], axis=None)
    return values, x_real

  # ----- the generator: noise, loss, gradients, update (in a replica) -----

  def _generator_gradients_impl(self, step, local_b, x_real):
    """A replica's generator gradients at `step`, and its part of the generator loss."""
    run = self.run
    z = self._noise(random_streams.GENERATOR_NOISE, step, local_b)
    variables = run.generator.trainable_variables
    with tf.GradientTape() as tape:
      x_fake = tf.cast(run.generator(z, training=True), tf.float32)
      # The logged value is summed back over replicas (generator_replica_update).
      surrogate, loss = self.generator_loss(
          run.critic, x_real, x_fake, formulation=self.settings.formulation,
          global_batch_size=self.run_config.train.batch_size,
          num_replicas=self.strategy.num_replicas_in_sync,
          all_reduce_sum=global_moments.replica_all_reduce_sum)
    grads = self.gradients(tape, surrogate, variables, run.generator_optimizer)
    return grads, loss

  def generator_replica_update(self, step, x_real):
    """One generator update in a replica's context (the benchmark times it alone)."""
    local_b = self.run_config.train.batch_size // self.strategy.num_replicas_in_sync
    grads, loss = self._generator_gradients(step, local_b, x_real)
    self.run.generator_optimizer.apply_gradients(
        zip(grads, self.run.generator.trainable_variables))
    return {'generator_loss': global_moments.replica_all_reduce_sum(loss),
            'grad_norm/generator': algorithms.global_norm(grads)}

  # ----- the step (cross-replica context) -----

  @tf.function(autograph=False)
  def train_step(self, labeled_iterator, unlabeled_iterator):
    """n_c critic updates, then one generator update; returns the logged values."""
    values = {}
    for _ in range(self.settings.critic_iterations):
      values, x_real = self._critic_update(labeled_iterator, unlabeled_iterator)
    # Feature matching compares with the last critic update's real batch (no extra draw).
    generator_values = self.strategy.run(
        self.generator_replica_update, args=(self.run.state.counters['step'].read_value(), x_real))
    values.update(self.first_replica(generator_values))
    return self.end_step(values)
