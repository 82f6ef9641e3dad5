"""Coupled L2 weight decay: wd·w is added to the gradient before the optimizer.

This is PyTorch Adam's `weight_decay` (not AdamW's decoupled decay). Groups: 1e-6 on Φ and S,
1e-3 on v, nothing on the generator (docs/algorithm.md#optimizer-and-weight-decay).
"""
import tensorflow as tf


def critic_weight_decays(critic, phi_and_s=1e-6, v=1e-3):
  """The decay of each of critic.trainable_variables, in that order."""
  v_ids = {id(var) for var in critic.v_variables}
  return [v if id(var) in v_ids else phi_and_s for var in critic.trainable_variables]


def add_coupled_weight_decay(gradients, variables, decays, num_replicas=1):
  """Returns g + wd·w for each variable.

  Under tf.distribute each replica's gradients are summed by the optimizer, so each adds
  wd·w / num_replicas and the sum carries wd·w once.
  """
  return [g if (g is None or wd == 0.0) else g + (wd / num_replicas) * tf.cast(w, g.dtype)
          for g, w, wd in zip(gradients, variables, decays)]
