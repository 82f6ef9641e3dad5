"""The run's optimizers: Adam with the authors' (PyTorch's) ε placement, and RMSprop.

PyTorch's Adam, which the released code uses, adds ε to the *bias-corrected* √v̂:

  θ ← θ − lr · m̂ / (√v̂ + ε),   m̂ = m / (1 − β1ᵗ),  v̂ = v / (1 − β2ᵗ).

Keras's Adam adds ε to the *uncorrected* √v, which is the same update with the effective
ε·/√(1 − β2ᵗ) — 3.2e-6 at step 1 for Keras's ε = 1e-7 and β2 = 0.999. Early in training,
gradients smaller than that move the weights much less than in the release (the paper's
Appendix B gives the optimizer). `TorchAdam` makes the update PyTorch's: Keras's formula
with ε·√(1 − β2ᵗ) in place of ε.
"""
import keras
from keras import ops

from tf_ipmssl import errors

OPTIMIZERS = ('adam', 'rmsprop')
# Where Adam's ε is added: to the bias-corrected √v̂ (PyTorch, the released code) or to the
# uncorrected √v (Keras's own Adam).
EPSILON_PLACEMENTS = ('bias_corrected', 'keras')


class TorchAdam(keras.optimizers.Adam):
  """keras.optimizers.Adam whose ε is added to the bias-corrected √v̂, as in PyTorch."""

  def update_step(self, gradient, variable, learning_rate):
    dtype = variable.dtype
    lr = ops.cast(learning_rate, dtype)
    gradient = ops.cast(gradient, dtype)
    local_step = ops.cast(self.iterations + 1, dtype)
    beta_1_power = ops.power(ops.cast(self.beta_1, dtype), local_step)
    beta_2_power = ops.power(ops.cast(self.beta_2, dtype), local_step)
    m = self._momentums[self._get_variable_index(variable)]
    v = self._velocities[self._get_variable_index(variable)]
    correction_2 = ops.sqrt(1 - beta_2_power)
    alpha = lr * correction_2 / (1 - beta_1_power)
    self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
    self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
    # m̂ / (√v̂ + ε) = (m / (1 − β1ᵗ)) · √(1 − β2ᵗ) / (√v + ε √(1 − β2ᵗ)).
    epsilon = ops.cast(self.epsilon, dtype) * correction_2
    self.assign_sub(variable, ops.divide(ops.multiply(m, alpha), ops.add(ops.sqrt(v), epsilon)))


def make_optimizer(name, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8,
                   epsilon_placement='bias_corrected'):
  """Adam (PyTorch's ε placement by default) or RMSprop (the WGAN paper's, Keras defaults)."""
  if name == 'adam':
    if epsilon_placement not in EPSILON_PLACEMENTS:
      raise errors.ConfigError(f'train.adam_epsilon_placement = {epsilon_placement!r} is not '
                               f'one of {list(EPSILON_PLACEMENTS)}')
    cls = TorchAdam if epsilon_placement == 'bias_corrected' else keras.optimizers.Adam
    return cls(learning_rate=learning_rate, beta_1=beta1, beta_2=beta2, epsilon=epsilon)
  if name == 'rmsprop':  # The WGAN paper's optimizer (weight clipping).
    return keras.optimizers.RMSprop(learning_rate=learning_rate)
  raise errors.ConfigError(f"unknown optimizer '{name}'; use one of {list(OPTIMIZERS)}")
