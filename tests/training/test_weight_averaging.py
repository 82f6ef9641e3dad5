"""The critic weight average (train.critic_ema_decay) against a NumPy recursion."""
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.training import weight_averaging


def test_effective_decay_schedule():
  got = [float(weight_averaging.effective_decay(0.99, n)) for n in (1, 10, 100, 1000, 10**6)]
  want = [min(0.99, (1 + n) / (10 + n)) for n in (1, 10, 100, 1000, 10**6)]
  np.testing.assert_allclose(got, want, rtol=1e-6)
  assert want[0] == pytest.approx(2 / 11) and want[-1] == 0.99


def test_average_follows_the_recursion():
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=0.125), 10, 1, seed=0)
  averaged = critic_lib.build_critic(critic_lib.BuildCritic(width=0.125), 10, 1, seed=1)
  pairs = weight_averaging.averaged_pairs(critic, averaged)
  # Every weight is averaged (kernels and biases here); the dropout RNG states are not.
  assert [t.path for _, t in pairs] == [v.path for v in critic.trainable_variables]
  assert not any('seed' in t.path for _, t in pairs)
  weight_averaging.copy_weights(pairs)
  reference = [np.asarray(a.numpy(), np.float64) for a, _ in pairs]
  rng = np.random.default_rng(0)
  update = tf.function(lambda n: weight_averaging.update_average(pairs, 0.9, n))
  for n in range(1, 6):
    for _, trained in pairs:
      trained.assign(rng.normal(size=trained.shape).astype(np.float32))
    update(tf.constant(n, tf.int64))
    d = min(0.9, (1 + n) / (10 + n))
    reference = [d * r + (1 - d) * np.asarray(t.numpy(), np.float64)
                 for r, (_, t) in zip(reference, pairs)]
  for r, (a, _) in zip(reference, pairs):
    np.testing.assert_allclose(a.numpy(), r, rtol=1e-5, atol=1e-6)
