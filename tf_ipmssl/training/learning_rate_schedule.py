"""The learning-rate schedule of a run: one factor on both base learning rates per step.

- Halving (`train.learning_rate_halving_epochs`): the factor halves every that many epochs.
- Linear decay (`train.learning_rate_linear_decay_start`, an option beyond the paper, off by
  default): the factor stays 1 until the fraction `start` of the run's steps, then falls
  linearly and reaches 0 after the last step, the annealing that GAN-based SSL code commonly
  ends with (e.g. Salimans et al., 2016). Measured on the Fashion-MNIST K+1 recipe it made
  the classifier worse, not better (docs/results/fashion_mnist.md, probe D1200).

The two may be combined: their factors multiply. Pure Python, evaluated by the training
loop before every step, so a resumed run continues the same schedule.
"""
import math


def learning_rate_factor(step, total_steps, epoch, halving_epochs=None,
                         linear_decay_start=None):
  """The factor on the base learning rates for the update that follows step `step` (0-based).

  Args:
    step: generator iterations done so far (supervised: updates done).
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
