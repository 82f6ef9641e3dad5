"""The run's optimizers, computed as PyTorch's (the released code's and the WGAN code's),
and their learning-rate schedule.

PyTorch's Adam, which the released code uses, adds ε to the *bias-corrected* √v̂:

  θ ← θ − lr · m̂ / (√v̂ + ε),   m̂ = m / (1 − β1ᵗ),  v̂ = v / (1 − β2ᵗ).

Keras's Adam adds ε to the *uncorrected* √v, which is the same update with the effective
ε·/√(1 − β2ᵗ) — 3.2e-6 at step 1 for Keras's ε = 1e-7 and β2 = 0.999. Early in training,
gradients smaller than that move the weights much less than in the release (the paper's
Appendix B gives the optimizer). `TorchAdam` computes the update as PyTorch does, bias
corrections from the float64 βs included.

RMSprop (weight clipping, the WGAN paper's optimizer, whose code uses PyTorch's defaults):
PyTorch's averages the squared gradient with α = 0.99 and adds ε = 1e-8 to its root,

  v ← α v + (1 − α) g²,   θ ← θ − lr · g / (√v + ε),

so that at step 1 every weight moves by ~10·lr whatever the size of its gradient. Keras's
RMSprop (ρ = 0.9) adds ε = 1e-7 *under* the root, lr · g / √(v + ε): a gradient much
smaller than √ε ≈ 3.2e-4 moves its weight by ~lr · g / 3.2e-4 instead. A weight-clipped
critic's gradients are of that size (its weights are at most 0.01), so Keras's RMSprop barely
moves it. `TorchRMSprop` computes PyTorch's update.

The learning-rate schedule of a run (`learning_rate_factor`): one factor on both base
learning rates per step.

- Halving (`train.learning_rate_halving_epochs`): the factor halves every that many epochs.
- Linear decay (`train.learning_rate_linear_decay_start`, an option beyond the paper, off by
  default): the factor stays 1 until the fraction `start` of the run's steps, then falls
  linearly and reaches 0 after the last step, the annealing that GAN-based SSL code commonly
  ends with (e.g. Salimans et al., 2016).

The two may be combined: their factors multiply. Pure Python, evaluated by the training
loop before every step, so a resumed run continues the same schedule.
"""
import math

import keras
from keras import ops

from tf_ipmssl import errors

OPTIMIZERS = ('adam', 'rmsprop')
# Where Adam's ε is added: to the bias-corrected √v̂ (PyTorch, the released code) or to the
# uncorrected √v (Keras's own Adam).
EPSILON_PLACEMENTS = ('bias_corrected', 'keras')


class TorchAdam(keras.optimizers.Adam):
  """keras.optimizers.Adam computed as torch.optim.Adam computes it.

  As PyTorch does, the bias corrections 1 − β1ᵗ and 1 − β2ᵗ are computed from the βs as
  Python floats (float64), not from the βs rounded to the variable's dtype (0.999 in float32
  is 0.99900001), ε is added to √v̂, and the moments are updated as m ← m + (g − m)(1 − β1),
  v ← β2 v + (1 − β2) g².
  """

  def update_step(self, gradient, variable, learning_rate):
    dtype = variable.dtype
    gradient = ops.cast(gradient, dtype)
    step = ops.cast(self.iterations + 1, 'float64')
    bias_correction_1 = 1.0 - ops.power(ops.convert_to_tensor(self.beta_1, 'float64'), step)
    bias_correction_2 = 1.0 - ops.power(ops.convert_to_tensor(self.beta_2, 'float64'), step)
    step_size = ops.cast(ops.cast(learning_rate, 'float64') / bias_correction_1, dtype)
    bias_correction_2_sqrt = ops.cast(ops.sqrt(bias_correction_2), dtype)
    m = self._momentums[self._get_variable_index(variable)]
    v = self._velocities[self._get_variable_index(variable)]
    self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
    self.assign(v, ops.add(ops.multiply(v, self.beta_2),
                           ops.multiply(ops.square(gradient), 1 - self.beta_2)))
    # θ ← θ − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + ε)
    denominator = ops.add(ops.divide(ops.sqrt(v), bias_correction_2_sqrt),
                          ops.convert_to_tensor(self.epsilon, dtype))
    self.assign_sub(variable, ops.multiply(step_size, ops.divide(m, denominator)))


class TorchRMSprop(keras.optimizers.RMSprop):
  """keras.optimizers.RMSprop computed as torch.optim.RMSprop computes it (no momentum, not
  centered): v ← ρ v + (1 − ρ) g², θ ← θ − lr · g / (√v + ε), with PyTorch's defaults
  ρ (PyTorch's α) = 0.99 and ε = 1e-8."""

  def __init__(self, learning_rate, rho=0.99, epsilon=1e-8, **kwargs):
    super().__init__(learning_rate=learning_rate, rho=rho, epsilon=epsilon, **kwargs)

  def update_step(self, gradient, variable, learning_rate):
    dtype = variable.dtype
    gradient = ops.cast(gradient, dtype)
    lr = ops.cast(learning_rate, dtype)
    v = self._velocities[self._get_variable_index(variable)]
    self.assign(v, ops.add(ops.multiply(v, self.rho),
                           ops.multiply(ops.square(gradient), 1 - self.rho)))
    denominator = ops.add(ops.sqrt(v), ops.convert_to_tensor(self.epsilon, dtype))
    self.assign_sub(variable, ops.divide(ops.multiply(lr, gradient), denominator))


def make_optimizer(name, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8,
                   epsilon_placement='bias_corrected'):
  """Adam (PyTorch's ε placement by default) or RMSprop (PyTorch's, as the WGAN code uses:
  α = 0.99, ε = 1e-8 on √v; Adam's βs and ε do not apply to it)."""
  check_optimizer(name, epsilon_placement)
  if name == 'adam':
    cls = TorchAdam if epsilon_placement == 'bias_corrected' else keras.optimizers.Adam
    return cls(learning_rate=learning_rate, beta_1=beta1, beta_2=beta2, epsilon=epsilon)
  # RMSprop: the WGAN paper's optimizer (weight clipping).
  return TorchRMSprop(learning_rate=learning_rate)


def check_optimizer(name, epsilon_placement='bias_corrected'):
  """A ConfigError for an unknown optimizer or Adam ε placement (train.optimizer,
  train.adam_epsilon_placement)."""
  if name not in OPTIMIZERS:
    raise errors.ConfigError(f"unknown optimizer '{name}'; use one of {list(OPTIMIZERS)}")
  if epsilon_placement not in EPSILON_PLACEMENTS:
    raise errors.ConfigError(f'train.adam_epsilon_placement = {epsilon_placement!r} is not '
                             f'one of {list(EPSILON_PLACEMENTS)}')


def learning_rate_factor(step, total_steps, epoch, halving_epochs=None,
                         linear_decay_start=None):
  """The factor on the base learning rates for the update that follows step `step` (0-based).

  Args:
    step: steps done so far (each n_c critic updates and a generator update; supervised:
      one update).
    total_steps: the run's length in those steps.
    epoch: epochs done so far (for the halving).
    halving_epochs: None, or halve every this many epochs.
    linear_decay_start: None, or a fraction in [0, 1): from step start·total_steps on the
      factor is (total_steps − step) / (total_steps − start·total_steps).
  """
  factor = 1.0
  if halving_epochs is not None:
    factor *= 0.5 ** math.floor(epoch / halving_epochs)
  if linear_decay_start is not None:
    start = linear_decay_start * total_steps
    if step >= start:
      factor *= (total_steps - step) / (total_steps - start)
  return factor
