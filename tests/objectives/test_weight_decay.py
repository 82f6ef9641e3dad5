"""Coupled L2 weight decay (algorithm.md#optimizer-and-weight-decay): g + wd·w, 1e-6 on Φ and S, 1e-3 on v."""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import gradient_checks
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import weight_decay


def _plain_gradients(critic):
  grads, _ = gradient_checks.surrogate_gradients(
      critic, tiny_critics.random_batches(seed=1), formulation='kplus1',
      constraints=[fisher.Fisher()], multipliers={'fisher_f': 0.5})
  return grads


def test_decay_groups_of_the_mlp_critic():
  critic = tiny_critics.MlpCritic(seed=1)
  decays = weight_decay.critic_weight_decays(critic)
  v_kernel = critic.v.kernel
  expected = [1e-3 if variable is v_kernel else 1e-6 for variable in critic.trainable_variables]
  assert decays == expected
  assert decays.count(1e-3) == 1 and len(decays) == 5  # Φ kernel, Φ bias, v, S kernel, S bias.


@pytest.mark.parametrize('num_replicas', [1, 2])
def test_coupled_decay_adds_wd_times_w_per_group(num_replicas):
  critic = tiny_critics.MlpCritic(seed=2)
  for variable in critic.trainable_variables:  # Weights of order 100 make 1e-6·w visible.
    variable.assign(variable * 100.0 + 50.0)
  grads = _plain_gradients(critic)
  decays = weight_decay.critic_weight_decays(critic)
  decayed = weight_decay.add_coupled_weight_decay(
      [tf.constant(g) for g in grads], critic.trainable_variables, decays,
      num_replicas=num_replicas)
  for variable, grad, new in zip(critic.trainable_variables, grads, decayed):
    wd = 1e-3 if variable is critic.v.kernel else 1e-6
    np.testing.assert_allclose(new.numpy() - grad, wd / num_replicas * variable.numpy(),
                               rtol=1e-9, atol=1e-15)
    assert np.any(new.numpy() != grad)


def test_coupled_decay_is_the_gradient_of_the_l2_term():
  """g + wd·w = ∇(loss + Σ wd/2 ‖w‖²), computed by a tape as an independent check."""
  critic = tiny_critics.random_linear_critic(seed=3)
  x = tf.constant(tiny_critics.random_batches(seed=2)[2])
  decays = weight_decay.critic_weight_decays(critic, phi_and_s=0.01, v=0.3)
  with tf.GradientTape(persistent=True) as tape:
    fake, logits = critic(x)
    loss = tf.reduce_sum(fake**2) + tf.reduce_sum(tf.sin(logits))
    l2 = tf.add_n([wd / 2.0 * tf.reduce_sum(tf.square(variable))
                   for wd, variable in zip(decays, critic.trainable_variables)])
    total = loss + l2
  plain = tape.gradient(loss, critic.trainable_variables)
  expected = tape.gradient(total, critic.trainable_variables)
  decayed = weight_decay.add_coupled_weight_decay(plain, critic.trainable_variables, decays)
  assert [d for d, v in zip(decays, critic.trainable_variables) if v is critic.w] == [0.3]
  for new, want in zip(decayed, expected):
    np.testing.assert_allclose(new.numpy(), want.numpy(), rtol=1e-12)


def test_missing_gradient_and_zero_decay_pass_through():
  w = tf.Variable([1.0, -2.0])
  g = tf.constant([0.5, 0.5])
  none_grad, unchanged = weight_decay.add_coupled_weight_decay([None, g], [w, w], [1e-3, 0.0])
  assert none_grad is None and unchanged is g
