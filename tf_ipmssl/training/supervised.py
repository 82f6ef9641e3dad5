"""The critic's classifier trained alone (train.mode = 'supervised'; paper Appendix C).

One iteration is one update of Φ and S with the labeled cross-entropy and the coupled weight
decay of Φ and S; there is no generator and no constraint. An epoch is a pass over the
labeled set.
"""
import tensorflow as tf

from tf_ipmssl.objectives import global_moments
from tf_ipmssl.training import algorithms


@algorithms.register
class Supervised(algorithms.Algorithm):
  """The labeled cross-entropy on Φ and S (see the module doc)."""
  name = 'supervised'

  def __init__(self, config, **run_pieces):
    super().__init__(config, **run_pieces)
    self.decays = ([self.objective.weight_decay_phi_s] *
                   len(self.critic.phi_and_s_variables))
    self._gradients = self.compile_piece(self._gradients_impl)

  def _gradients_impl(self, x_labeled, y_labeled):
    variables = self.critic.phi_and_s_variables
    with tf.GradientTape() as tape:
      ce, accuracy = self.labeled_cross_entropy(x_labeled, y_labeled)
      loss = self.scaled(self.critic_optimizer, ce)
    grads = tape.gradient(loss, variables)
    grads = self.with_decay(self.critic_optimizer, grads, variables, self.decays)
    return grads, ce, accuracy

  def _replica_step(self, x_labeled, y_labeled):
    grads, ce, accuracy = self._gradients(x_labeled, y_labeled)
    self.critic_optimizer.apply_gradients(zip(grads, self.critic.phi_and_s_variables))
    ce, accuracy = global_moments.replica_all_reduce_sum((ce, accuracy))
    return {'ce': ce, 'labeled_accuracy': accuracy,
            'grad_norm/critic': algorithms.global_norm(grads)}

  def train_iteration(self, labeled_iterator):
    x_labeled, y_labeled = next(labeled_iterator)
    values = self.first_replica(self.strategy.run(self._replica_step,
                                                  args=(x_labeled, y_labeled)))
    self.count_critic_update()
    return self.end_iteration(values)
