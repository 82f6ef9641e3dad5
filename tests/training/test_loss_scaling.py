"""mixed_float16's loss scaling, one critic update (algorithms.gradients, run.py's
LossScaleOptimizer), against the same update computed without the scale.

With the run's loss scale S (2^15 at the start), the critic's gradient is the tape's with S as
the output gradient, plus S times the coupled weight decay wd·w; the LossScaleOptimizer divides
S out before Adam sees it. So:
- the scaled gradient is S times the gradient of the same float16 computation taken without
  the scale (S is a power of two: scaling is exact where nothing underflows), decay included
  (weight decays of 1 here, so that a decay left unscaled would be a large part of it);
- Adam's first moment after the step is (1 − β1) times that unscaled gradient (β1 = 0.5, the
  run's default: this is what a scale left in would change), and the weights moved by
  PyTorch Adam's first step on it, lr·g/(|g| + ε) (optimizers.py; the same for any scale of
  g but its smallest entries, so it checks the step, not the unscaling);
- the float16 computation's gradient is the float32 computation's (the same weights, the
  float32 policy; dropout off, whose masks a float16 draw would change) within float16's
  precision: measured 0.5% of its norm without the decay, 5% in the first layers.
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl import process_state
from tf_ipmssl.objectives import fisher
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config
from tf_ipmssl.training import semi_supervised

pytestmark = pytest.mark.numerics

LEARNING_RATE = 1e-3


def _batches():
  rng = np.random.default_rng(0)
  return (tf.constant(rng.uniform(-1, 1, (8, 32, 32, 1)), tf.float32),
          tf.constant(rng.integers(0, 10, 8), tf.int32),
          tf.constant(rng.uniform(-1, 1, (8, 32, 32, 1)), tf.float32))


def _gradients(policy, scaled=True, decay=1.0):
  """(critic weights before, gradients, the run) of one critic update under `policy`; with
  scaled=False, the same float16 computation with the loss scale left out."""
  with process_state.preserved():
    keras.mixed_precision.set_global_policy(policy or 'float32')
    config = run_config.RunConfig.create(
        settings=dict(formulation='kplus1', constraints=(fisher.Fisher('f', 0.1),),
                      lambda_ce=1.5, critic_iterations=1),
        critic={'width': 0.0625, 'init_stddev': 0.1, 'input_dropout': 0.0, 'dropout': 0.0},
        generator={'ngf': 4},
        batch_size=8, seed=3, steps=1, mixed_precision=policy,
        critic_learning_rate=LEARNING_RATE, weight_decay_phi_s=decay, weight_decay_v=decay)
    run = run_lib.Run.build(config, num_classes=10, image_shape=(32, 32, 1))
    steps = semi_supervised.SemiSupervised(run)
    if not scaled:
      steps.run_config = _Unscaled(config)
    grads, _, _ = tf.function(steps._critic_gradients)(  # pylint: disable=protected-access
        *_batches(), tf.constant(0, tf.int64))
    before = [v.numpy() for v in run.critic.trainable_variables]
    return before, grads, run


class _Unscaled:
  """A run configuration that says the losses are not scaled, and is otherwise `config`."""

  def __init__(self, config):
    self._config = config

  loss_scaling = False

  def __getattr__(self, name):
    return getattr(self._config, name)


def _flat(arrays):
  return np.concatenate([np.asarray(a, np.float64).ravel() for a in arrays])


def test_one_critic_update_under_mixed_float16_is_the_unscaled_update():
  before, scaled, run = _gradients('mixed_float16')
  optimizer = run.critic_optimizer
  assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
  scale = float(optimizer.scale_loss(1.0))
  assert scale == 2.0 ** 15
  _, unscaled, _ = _gradients('mixed_float16', scaled=False)
  _, without_decay, _ = _gradients('mixed_float16', scaled=False, decay=0.0)
  _, float32, _ = _gradients(None)
  scaled, unscaled, without_decay, float32 = (
      _flat(g) for g in (scaled, unscaled, without_decay, float32))
  assert np.linalg.norm(unscaled) > 0
  # The scaled gradient is S times the unscaled one, decay included ...
  assert np.linalg.norm(scaled / scale - unscaled) < 1e-3 * np.linalg.norm(unscaled)
  # ... where the decay is a large part of it, so a decay left unscaled would show.
  assert np.linalg.norm(unscaled - without_decay) > 0.1 * np.linalg.norm(unscaled)
  # float16's computation is float32's within its precision (2^-11 per rounding).
  assert np.linalg.norm(unscaled - float32) < 2e-2 * np.linalg.norm(float32)

  # The optimizer divides S out: Adam's first step on g = scaled / S.
  variables = run.critic.trainable_variables
  grads = [tf.constant(g) for g in np.split(scaled.astype(np.float32),
                                            np.cumsum([v.numpy().size for v in variables])[:-1])]
  grads = [tf.reshape(g, v.shape) for g, v in zip(grads, variables)]
  optimizer.apply_gradients(zip(grads, variables))
  g = scaled / scale
  inner = optimizer.inner_optimizer
  momentum = _flat([inner._momentums[inner._get_variable_index(v)] for v in variables])  # pylint: disable=protected-access
  np.testing.assert_allclose(momentum, (1 - inner.beta_1) * g, rtol=1e-5, atol=1e-12)
  moved = _flat([v.numpy() for v in variables]) - _flat(before)
  np.testing.assert_allclose(moved, -LEARNING_RATE * g / (np.abs(g) + 1e-8), rtol=1e-4,
                             atol=1e-9)
