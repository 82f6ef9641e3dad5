"""The generator's objective: minimise L_G = −E_z[f(g(z))] (docs/algorithm.md#generator-objective).

f is the full critic of the chosen formulation (plain: v·Φ), evaluated with the critic in
training mode (dropout on) and its weights frozen (the caller differentiates only the
generator's variables). Linear in the batch, so replica-local sums need no all-reduce.
"""
import tensorflow as tf

from tf_ipmssl.objectives import formulations
from tf_ipmssl.objectives import global_moments


def generator_objective(critic, x_fake, *, formulation, global_batch_size, training=True):
  """Returns this replica's contribution −Σ f(x_fake) / B to L_G."""
  fake_logit, class_logits = critic(x_fake, training=training)
  f = formulations.critic_outputs(fake_logit, class_logits, formulation).f
  return -tf.reduce_sum(f) / tf.cast(global_batch_size, f.dtype)


GENERATOR_LOSSES = ('ipm', 'feature_matching')


def feature_matching_objective(critic, x_real, x_fake, *, global_batch_size, training=True,
                               all_reduce_sum=global_moments.identity_all_reduce):
  """An alternative generator loss (an option; not in the paper): feature matching,

    L_G = ‖E_P[Φ(x)] − E_Q[Φ(g(z))]‖²,

  the squared distance between the mean critic features of a real and a generated batch
  (Salimans et al., "Improved Techniques for Training GANs", 2016, §3.1 and §5, where it
  gave the best semi-supervised K+1 classifiers). The means are over the global batch:
  returns (this replica's surrogate loss, whose gradients sum to ∇L_G; L_G).
  """
  b = tf.cast(global_batch_size, tf.float32)
  moments = {'real': tf.reduce_sum(tf.stop_gradient(critic.features(x_real, training=training)),
                                   axis=0) / b,
             'fake': tf.reduce_sum(critic.features(x_fake, training=training), axis=0) / b}

  def objective(m):
    return tf.reduce_sum(tf.square(m['real'] - m['fake'])), {}

  surrogate, value, _ = global_moments.objective_of_global_moments(moments, objective,
                                                                   all_reduce_sum)
  return surrogate, value
