"""The generator's objective (SPEC §3): minimise L_G = −E_z[f(g(z))].

f is the full critic of the chosen formulation (plain: v·Φ), evaluated with the critic in
training mode (dropout on) and its weights frozen (the caller differentiates only the
generator's variables). Linear in the batch, so replica-local sums need no all-reduce.
"""
import tensorflow as tf

from tf_ipmssl.objectives import formulations


def generator_objective(critic, x_fake, *, formulation, global_batch_size, training=True):
  """Returns this replica's contribution −Σ f(x_fake) / B to L_G."""
  fake_logit, class_logits = critic(x_fake, training=training)
  f = formulations.critic_outputs(fake_logit, class_logits, formulation).f
  return -tf.reduce_sum(f) / tf.cast(global_batch_size, f.dtype)
