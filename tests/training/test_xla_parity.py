"""XLA (train.jit_compile) through nested tapes computes the gradients the plain graph does."""
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev
from tf_ipmssl.training import steps as steps_lib


@pytest.mark.xfail(strict=True, reason=(
    'Known open issue: under XLA the critic gradients differ from the plain graph by ~3% '
    '(Fisher) to ~20% (GP) in norm on this case, while the generator, the noise and the '
    'labeled CE agree to 1e-7. Cause not found yet; train.jit_compile stays off by default. '
    'This test starts passing (and, strict, fails) once the two agree.'))
@pytest.mark.parametrize('normalization', ['none', 'layer_norm'])
def test_jit_compiled_gradients_match_plain_gradients(normalization):
  critic = critic_lib.build_critic(num_classes=10, input_channels=1, width=0.0625,
                                   normalization=normalization, input_dropout=0.0,
                                   dropout=0.0, init_stddev=0.1, seed=1)
  generator = generator_lib.build_generator(output_channels=1, ngf=4, seed=2)
  constraints = (fisher.Fisher('f', 0.1), sobolev.Sobolev('f_neg', 0.1),
                 gradient_penalty.GradientPenalty('f_neg'))
  multipliers = {'fisher_f': tf.Variable(0.3), 'sobolev_f_neg': tf.Variable(-0.2)}
  counters = {k: tf.Variable(0, dtype=tf.int64) for k in ('step', 'critic_iteration',
                                                            'nonfinite')}
  rng = np.random.default_rng(0)
  x_labeled = tf.constant(rng.uniform(-1, 1, (8, 32, 32, 1)), tf.float32)
  y_labeled = tf.constant(rng.integers(0, 10, 8), tf.int32)
  x_real = tf.constant(rng.uniform(-1, 1, (8, 32, 32, 1)), tf.float32)
  gradients = {}
  for jit in (False, True):
    steps = steps_lib.TrainingSteps(
        strategy=tf.distribute.get_strategy(), critic=critic, generator=generator,
        critic_optimizer=None, generator_optimizer=None, multipliers=multipliers,
        counters=counters, formulation='kplus1', constraints=constraints, lambda_ce=1.5,
        global_batch_size=8, critic_iterations=1, noise_dim=100, seed=3, jit_compile=jit)
    compute = steps._critic_gradients if jit else tf.function(steps._critic_gradients)  # pylint: disable=protected-access
    grads, values, _ = compute(x_labeled, y_labeled, x_real, tf.constant(5, tf.int64))
    gradients[jit] = ([g.numpy() for g in grads], {k: float(v) for k, v in values.items()})
  # The whole gradient vector: early layers' entries are ~1e-8 at init, pure float32
  # rounding, so an entry-wise relative check would test the rounding, not the graph.
  plain = np.concatenate([g.ravel() for g in gradients[False][0]])
  compiled = np.concatenate([g.ravel() for g in gradients[True][0]])
  assert np.linalg.norm(plain) > 0
  assert np.linalg.norm(compiled - plain) < 1e-4 * np.linalg.norm(plain)
  for name, value in gradients[False][1].items():
    assert gradients[True][1][name] == pytest.approx(value, rel=1e-4, abs=1e-5), name
