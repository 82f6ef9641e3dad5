"""XLA (train.jit_compile) through nested tapes computes the gradients the plain graph does.

Given the same random numbers. TensorFlow's XLA kernels for stateless random ops draw a
different stream than its CPU/GPU kernels for the same Philox key and counter (checked with
TF 2.21: StatelessRandomUniformV2 differs by up to 0.96 for one key/counter), so a
jit-compiled run draws other noise, GP interpolation weights and dropout masks from the same
seeds: the same algorithm with other random numbers. Here the draws are pinned (dropout off,
noise and α fixed tensors) so that only the compiled computation is compared.
"""
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config
from tf_ipmssl.training import semi_supervised

pytestmark = pytest.mark.numerics


@pytest.fixture
def pinned_random_draws(monkeypatch):
  noise = tf.constant(np.random.default_rng(5).normal(size=(8, 100)), tf.float32)
  alpha = tf.constant(np.random.default_rng(6).uniform(size=(8, 1, 1, 1)), tf.float32)
  monkeypatch.setattr(semi_supervised.SemiSupervised, '_noise',
                      lambda self, stream, counter, local_batch: noise[:local_batch])
  monkeypatch.setattr(gradient_penalty, 'interpolation_weights',
                      lambda batch, seed, per_example=True, dtype=tf.float32: alpha[:batch])


@pytest.mark.usefixtures('pinned_random_draws')
@pytest.mark.parametrize('normalization', ['none', 'layer_norm'])
def test_jit_compiled_gradients_match_plain_gradients(normalization):
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=0.0625, normalization=normalization,
                                                          input_dropout=0.0, dropout=0.0,
                                                          init_stddev=0.1),
                                   num_classes=10, input_channels=1, seed=1)
  generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=4), output_channels=1,
                                            seed=2)
  constraints = (fisher.Fisher('f', 0.1), sobolev.Sobolev('f_neg', 0.1),
                 gradient_penalty.GradientPenalty('f_neg'))
  rng = np.random.default_rng(0)
  x_labeled = tf.constant(rng.uniform(-1, 1, (8, 32, 32, 1)), tf.float32)
  y_labeled = tf.constant(rng.integers(0, 10, 8), tf.int32)
  x_real = tf.constant(rng.uniform(-1, 1, (8, 32, 32, 1)), tf.float32)
  gradients = {}
  for jit in (False, True):
    config = run_config.RunConfig.create(
        settings=dict(formulation='kplus1', constraints=constraints, lambda_ce=1.5,
                      critic_iterations=1),
        batch_size=8, seed=3, jit_compile=jit, steps=1)
    state = run_lib.RunState(config.constraints, num_classes=10)
    state.multipliers['fisher_f'].assign(0.3)
    state.multipliers['sobolev_f_neg'].assign(-0.2)
    # The networks above and no optimizers: only the gradients are computed.
    steps = semi_supervised.SemiSupervised(
        run_lib.Run(config, critic, generator, None, None, None, state))
    compute = steps._critic_gradients if jit else tf.function(steps._critic_gradients)  # pylint: disable=protected-access
    grads, values, _ = compute(x_labeled, y_labeled, x_real, tf.constant(5, tf.int64))
    gradients[jit] = ([g.numpy() for g in grads], {k: float(v) for k, v in values.items()})
  # The whole gradient vector: early layers' entries are ~1e-8 at init, pure float32
  # rounding, so an entry-wise relative check would test the rounding, not the graph.
  plain = np.concatenate([g.ravel() for g in gradients[False][0]])
  compiled = np.concatenate([g.ravel() for g in gradients[True][0]])
  assert np.linalg.norm(plain) > 0
  assert np.linalg.norm(compiled - plain) < 1e-4 * np.linalg.norm(plain)  # Measured ≈ 3e-6.
  for name, value in gradients[False][1].items():
    assert gradients[True][1][name] == pytest.approx(value, rel=1e-4, abs=1e-5), name


def test_xla_draws_another_stream_from_the_same_seed():
  """Why the draws are pinned above (and why a jit_compile run has other noise): if this
  starts failing, TensorFlow's XLA and plain kernels agree and the pinning can go."""
  seed = tf.constant([7, 11], tf.int64)
  draw = lambda s: tf.random.stateless_uniform([4, 100], seed=s, alg='philox')  # pylint: disable=unnecessary-lambda-assignment
  plain = tf.function(draw)(seed).numpy()
  compiled = tf.function(draw, jit_compile=True)(seed).numpy()
  np.testing.assert_array_equal(plain, tf.function(draw)(seed).numpy())  # Deterministic.
  assert np.abs(plain - compiled).max() > 0.1
