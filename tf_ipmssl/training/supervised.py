"""The critic's classifier trained alone (train.mode = 'supervised'; paper Appendix C).

One step is one update of Φ and S with the labeled cross-entropy
(critic_objective.labeled_cross_entropy) and the coupled weight decay of Φ and S; there is
no generator and no constraint. An epoch is a pass over the labeled set.

The module reads in the order of the computation: a replica's gradients, its update, then
the step (`Supervised.train_step`, a tf.function) that the training loop calls once per
step. The pieces every algorithm shares (`gradients`, `first_replica`, `count_critic_update`,
`end_step`) are algorithms.Algorithm's.
"""
import tensorflow as tf

from tf_ipmssl.objectives import critic_objective
from tf_ipmssl.objectives import global_moments
from tf_ipmssl.training import algorithms


class Supervised(algorithms.Algorithm):
  """The labeled cross-entropy on Φ and S (see the module doc)."""
  name = 'supervised'

  def __init__(self, run, strategy=None, **changes):
    super().__init__(run, strategy, **changes)
    self.decays = ([self.run_config.train.weight_decay_phi_s] *
                   len(run.critic.phi_and_s_variables))
    self._gradients = self.compile_piece(self._gradients_impl)

  def _gradients_impl(self, x_labeled, y_labeled):
    """A replica's gradients of the cross-entropy (with the weight decay), CE and accuracy."""
    critic = self.run.critic
    variables = critic.phi_and_s_variables
    with tf.GradientTape() as tape:
      logits = tf.cast(critic.classify(x_labeled, training=True), tf.float32)
      ce, accuracy = critic_objective.labeled_cross_entropy(
          logits, y_labeled, self.run_config.train.batch_size)
    grads = self.gradients(tape, ce, variables, self.run.critic_optimizer, self.decays)
    return grads, ce, accuracy

  def _replica_update(self, x_labeled, y_labeled):
    """A replica's update of Φ and S; the logged values, summed over the replicas."""
    grads, ce, accuracy = self._gradients(x_labeled, y_labeled)
    self.run.critic_optimizer.apply_gradients(zip(grads, self.run.critic.phi_and_s_variables))
    ce, accuracy = global_moments.replica_all_reduce_sum((ce, accuracy))
    return {'ce': ce, 'labeled_accuracy': accuracy,
            'grad_norm/critic': algorithms.global_norm(grads)}

  @tf.function(autograph=False)
  def train_step(self, labeled_iterator):
    """One update of Φ and S on the next labeled batch; returns the logged values."""
    x_labeled, y_labeled = next(labeled_iterator)
    values = self.first_replica(self.strategy.run(self._replica_update,
                                                  args=(x_labeled, y_labeled)))
    self.count_critic_update()
    return self.end_step(values)
