"""The generator's objective: minimise L_G = −E_z[f(g(z))] (docs/algorithm.md#generator-objective).

f is the full critic of the chosen formulation (plain: v·Φ), evaluated with the critic in
training mode (dropout on) and its weights frozen (the caller differentiates only the
generator's variables). Linear in the batch, so replica-local sums need no all-reduce.
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import formulations
from tf_ipmssl.objectives import global_moments


def generator_objective(critic, x_fake, *, formulation, global_batch_size, training=True):
  """Returns this replica's contribution −Σ f(x_fake) / B to L_G."""
  fake_logit, class_logits = critic(x_fake, training=training)
  f = formulations.critic_outputs(fake_logit, class_logits, formulation).f
  return -tf.reduce_sum(f) / tf.cast(global_batch_size, f.dtype)




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


@dataclasses.dataclass(frozen=True)
class GeneratorLoss:
  """A generator loss (ssl.generator_loss names it): called in a replica's context inside
  the generator's gradient tape, returns (this replica's surrogate loss, whose gradients sum
  to ∇L_G over replicas; this replica's share of the logged L_G, summed over replicas)."""
  name = 'generator_loss'

  def __call__(self, critic, x_real, x_fake, *, formulation, global_batch_size,
               num_replicas, all_reduce_sum):
    raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class IPMGeneratorLoss(GeneratorLoss):
  """The paper's L_G = −E_Q f (generator_objective); the real batch is not read."""
  name = 'ipm'

  def __call__(self, critic, x_real, x_fake, *, formulation, global_batch_size,
               num_replicas, all_reduce_sum):
    del x_real, num_replicas, all_reduce_sum
    loss = generator_objective(critic, x_fake, formulation=formulation,
                               global_batch_size=global_batch_size, training=True)
    return loss, loss


@dataclasses.dataclass(frozen=True)
class FeatureMatchingLoss(GeneratorLoss):
  """‖E_P Φ − E_Q Φ‖² (feature_matching_objective), an option not in the paper."""
  name = 'feature_matching'

  def __call__(self, critic, x_real, x_fake, *, formulation, global_batch_size,
               num_replicas, all_reduce_sum):
    del formulation
    surrogate, loss = feature_matching_objective(
        critic, x_real, x_fake, global_batch_size=global_batch_size,
        all_reduce_sum=all_reduce_sum)
    # The value is the global L_G on every replica; the caller sums the replicas' shares.
    return surrogate, loss / num_replicas


GENERATOR_LOSSES = {loss.name: loss for loss in (IPMGeneratorLoss(), FeatureMatchingLoss())}


def get_generator_loss(name) -> GeneratorLoss:
  """The generator loss bound as ssl.generator_loss; a ConfigError for an unknown name."""
  if name not in GENERATOR_LOSSES:
    raise errors.ConfigError(f'ssl.generator_loss = {name!r} is not one of '
                             f'{list(GENERATOR_LOSSES)}')
  return GENERATOR_LOSSES[name]
