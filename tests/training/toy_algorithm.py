"""An algorithm defined outside the library, to show that one module and gin lines suffice.

EntropyMinimization (Grandvalet & Bengio, "Semi-supervised Learning by Entropy
Minimization", 2005) trains the critic's classifier S(Φ(x)) on

  CE(x_l, y_l) + β · H(softmax(S(Φ(x_u)))),

the labeled cross-entropy plus the mean prediction entropy on the unlabeled images; there is
no generator and no constraint. It uses the labeled cross-entropy of the critic objective
(critic_objective.labeled_cross_entropy) and the pieces every algorithm shares
(algorithms.Algorithm: gradients, first_replica, count_critic_update, end_step), and
writes its own training step, a tf.function. β is its own setting (`Settings`),
bound in gin as `entropy_minimization.beta`. A library module decorates its class with
`@algorithms.register`; here the class is registered by the module a gin file imports
(register_toy_algorithm.py), so that this test process registers it only for the block that
needs it (`algorithms.REGISTRY.registered`). A gin file uses it with

  import tests.training.register_toy_algorithm
  train.mode = 'entropy_minimization'
  entropy_minimization.beta = 0.3
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import critic_objective
from tf_ipmssl.objectives import global_moments
from tf_ipmssl.training import algorithms


class EntropyMinimization(algorithms.Algorithm):
  """The labeled cross-entropy plus β times the unlabeled prediction entropy."""
  name = 'entropy_minimization'
  reads = ('labeled', 'unlabeled')
  epoch_set = 'unlabeled'

  @dataclasses.dataclass(frozen=True)
  class Settings:
    beta: float = 0.3  # β, the weight of the entropy term.

    def __post_init__(self):
      errors.check_number('entropy_minimization.beta', self.beta, low=0.0)

  def __init__(self, run, strategy=None, **changes):
    super().__init__(run, strategy, **changes)
    self.variables = run.critic.phi_and_s_variables
    self._gradients = self.compile_piece(self._gradients_impl)

  def _gradients_impl(self, x_labeled, y_labeled, x_unlabeled):
    critic, batch_size = self.run.critic, self.run_config.train.batch_size
    with tf.GradientTape() as tape:
      ce, _ = critic_objective.labeled_cross_entropy(
          critic.classify(x_labeled, training=True), y_labeled, batch_size)
      log_p = tf.nn.log_softmax(critic.classify(x_unlabeled, training=True))
      entropy = -tf.reduce_sum(tf.exp(log_p) * log_p) / batch_size
      loss = ce + self.settings.beta * entropy
    grads = self.gradients(tape, loss, self.variables, self.run.critic_optimizer)
    return grads, ce, entropy

  def _replica_update(self, x_labeled, y_labeled, x_unlabeled):
    grads, ce, entropy = self._gradients(x_labeled, y_labeled, x_unlabeled)
    self.run.critic_optimizer.apply_gradients(zip(grads, self.variables))
    ce, entropy = global_moments.replica_all_reduce_sum((ce, entropy))
    return {'ce': ce, 'entropy': entropy, 'grad_norm/critic': algorithms.global_norm(grads)}

  @tf.function
  def train_step(self, labeled_iterator, unlabeled_iterator):
    x_labeled, y_labeled = next(labeled_iterator)
    x_unlabeled = next(unlabeled_iterator)
    values = self.first_replica(self.strategy.run(
        self._replica_update, args=(x_labeled, y_labeled, x_unlabeled)))
    self.count_critic_update()
    return self.end_step(values)
