"""Analytic FLOP counts of the training and inference computations (docs/performance.md).

What is counted: the multiply-adds of convolutions, transposed convolutions and dense layers,
2 FLOPs per multiply-add. Elementwise work (bias, LeakyReLU, dropout, normalization, losses,
optimizer updates, the input transform) is not counted: it is memory-bound, not FLOP-bound,
and below 1% of the count.

Per example and layer (F_l its forward count):

  Conv2D           F = 2 · H_out · W_out · k_h · k_w · C_in · C_out   (padding included)
  Conv2DTranspose  F = 2 · H_in · W_in · k_h · k_w · C_in · C_out     (the conv it transposes)
  Dense            F = 2 · D_in · D_out

Passes, as multiples of a network's forward count F = Σ_l F_l (F_1: the layer that reads the
network's input; it needs no input gradient when that input is data or noise):

  forward                            1·F
  backward to the weights            2·F − F_1   a weight gradient and an input gradient
                                                 (F_l each) per layer, none into the data
  input gradient ∇_x h               1·F         every layer's input gradient
  double backward through ∇_x h      2·F         each backprop-input op is differentiated
                                                 w.r.t. its kernel and w.r.t. its incoming
                                                 gradient: two ops of cost F_l

An SSL critic update (batch B; Sobolev and GP need ∇_x h, docs/algorithm.md#constraints)
therefore counts

  B·G                                        generate x_q (generator forward, G its count)
  R·(F + 2F − F_1)                            forward + backward on R = 3B rows (4B with GP)
  + Σ_components R_c·(F + 2F)                 input gradient + double backward

and a generator update B·(G + F + F + 2G − G_1): generator forward, critic forward, critic
input gradient (critic frozen: no weight gradients), generator backward.

"Executed" counts what the library's graph runs: without batch norm the critic objective
stacks the rows whose input gradient some constraint needs into one critic call and takes
∇_x h of that stack for each component, so R_c = the rows of that stack (2B with Sobolev,
real and generated, + B with GP, interpolates). "Required" counts only the rows each
component's constraint uses. The two agree unless two components need different rows.
"""
import dataclasses
from typing import Sequence

import keras
import numpy as np

# Pass multipliers of the forward count F (module docstring).
FORWARD = 1
BACKWARD = 2          # minus the data layer's input gradient
INPUT_GRADIENT = 1
DOUBLE_BACKWARD = 2

EXECUTED, REQUIRED = 'executed', 'required'


@dataclasses.dataclass(frozen=True)
class LayerCost:
  """Forward FLOPs of one layer for one example."""
  name: str
  flops: int


def conv2d_flops(h_out, w_out, kernel_h, kernel_w, c_in, c_out):
  return 2 * h_out * w_out * kernel_h * kernel_w * c_in * c_out


def conv2d_transpose_flops(h_in, w_in, kernel_h, kernel_w, c_in, c_out):
  return 2 * h_in * w_in * kernel_h * kernel_w * c_in * c_out


def dense_flops(d_in, d_out):
  return 2 * d_in * d_out


def layer_flops(layer) -> int:
  """Forward FLOPs per example of a built Keras layer; 0 for layers without matmuls."""
  if isinstance(layer, keras.layers.Conv2DTranspose):  # Before Conv2D: it is a subclass.
    kh, kw, c_out, c_in = layer.kernel.shape  # Transposed kernels are [kh, kw, out, in].
    _, h_in, w_in, _ = layer.input.shape
    return conv2d_transpose_flops(h_in, w_in, kh, kw, c_in, c_out)
  if isinstance(layer, keras.layers.Conv2D):
    kh, kw, c_in_per_group, c_out = layer.kernel.shape
    _, h_out, w_out, _ = layer.output.shape
    return conv2d_flops(h_out, w_out, kh, kw, c_in_per_group, c_out)
  if isinstance(layer, keras.layers.Dense):
    d_in, d_out = layer.kernel.shape
    return dense_flops(d_in, d_out)
  return 0


def _costs(layers) -> list[LayerCost]:
  costs = [LayerCost(layer.name, int(layer_flops(layer))) for layer in layers]
  return [c for c in costs if c.flops]


def critic_costs(critic) -> list[LayerCost]:
  """Per-layer forward FLOPs of a tf_ipmssl Critic (body Φ, then the heads v and S).

  Both heads are counted in every pass (they are under 0.03% of the total at width 1).
  """
  return _costs(list(critic.body.layers) + [critic.v_head, critic.s_head])


def generator_costs(generator) -> list[LayerCost]:
  """Per-layer forward FLOPs of a tf_ipmssl Generator."""
  return _costs(generator.body.layers)


@dataclasses.dataclass(frozen=True)
class NetworkCost:
  """A network's forward count per example, F, and that of its input layer, F_1."""
  forward: int
  first_layer: int

  @classmethod
  def of(cls, costs: Sequence[LayerCost]):
    return cls(forward=sum(c.flops for c in costs), first_layer=costs[0].flops)

  def training(self):
    """Forward + backward to the weights, per example: 3F − F_1."""
    return FORWARD * self.forward + BACKWARD * self.forward - self.first_layer

  def gradient_penalty(self):
    """Input gradient + its double backward, per example and gradient component: 3F."""
    return (INPUT_GRADIENT + DOUBLE_BACKWARD) * self.forward


def gradient_rows(constraints, batch_size) -> dict:
  """{component: rows whose ∇_x h is used} (Sobolev: real + generated; GP: interpolates)."""
  rows = {}
  for c in constraints:
    if c.needs_gradients_at_data or c.needs_gradients_at_interpolates:
      rows.setdefault(c.component, 0)
      rows[c.component] += (2 * batch_size * c.needs_gradients_at_data +
                            batch_size * c.needs_gradients_at_interpolates)
  return rows


def forward_rows(constraints, batch_size) -> int:
  """Rows the critic sees in one critic update: labeled, real, generated (+ interpolates)."""
  interpolates = any(c.needs_gradients_at_interpolates for c in constraints)
  return (3 + interpolates) * batch_size


def critic_update_flops(critic: NetworkCost, generator: NetworkCost, constraints, batch_size,
                        batched=True) -> dict:
  """{'executed', 'required'} FLOPs of one SSL critic update (module docstring)."""
  rows = forward_rows(constraints, batch_size)
  base = batch_size * generator.forward + rows * critic.training()
  needed = gradient_rows(constraints, batch_size)
  required = base + sum(needed.values()) * critic.gradient_penalty()
  stacked_rows = (2 * batch_size * any(c.needs_gradients_at_data for c in constraints) +
                  batch_size * any(c.needs_gradients_at_interpolates for c in constraints))
  executed_rows = len(needed) * stacked_rows if batched else sum(needed.values())
  executed = base + executed_rows * critic.gradient_penalty()
  return {EXECUTED: executed, REQUIRED: required}


def generator_update_flops(critic: NetworkCost, generator: NetworkCost, batch_size) -> int:
  """One generator update: G + F + F + 2G − G_1 per example."""
  per_example = (generator.forward + critic.forward + INPUT_GRADIENT * critic.forward +
                 BACKWARD * generator.forward - generator.first_layer)
  return batch_size * per_example


def ssl_step_flops(critic: NetworkCost, generator: NetworkCost, constraints, batch_size,
                   critic_iterations, batched=True) -> dict:
  """{'executed', 'required'} FLOPs of one SSL step: n_c = `critic_iterations` critic
  updates and one generator update."""
  update = critic_update_flops(critic, generator, constraints, batch_size, batched)
  gen = generator_update_flops(critic, generator, batch_size)
  return {k: critic_iterations * v + gen for k, v in update.items()}


def supervised_step_flops(critic: NetworkCost, batch_size) -> int:
  return batch_size * critic.training()


def forward_flops(critic: NetworkCost, batch_size) -> int:
  return batch_size * critic.forward


def matmul_flops(m, n, k) -> int:
  """[m, k] @ [k, n]."""
  return 2 * int(np.prod([m, n, k], dtype=np.int64))
