"""A constraint defined outside the library, to show that one module and gin lines suffice.

ToyCentering holds the critic component's mean under μ = (P + Q)/2 at zero,

  Ω = ½ E_P[h] + ½ E_Q[h],

with a multiplier λ and penalty weight ρ (an AugmentedLagrangianConstraint, as Fisher and
Sobolev: `penalty_weight`), and after every critic update clips the fake direction v to
[−v_bound, v_bound]. The library's constraints are registered in one list
(library.CONSTRAINTS); here the class is registered by the module a gin file imports (register_toy_constraint.py), so that this test process registers it only
for the block that needs it (`constraint.REGISTRY.registered`). A gin file uses it with

  import tests.training.register_toy_constraint
  ssl.constraints = [@ToyCentering()]
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl.objectives import constraint


def centering_omega(mean_real, mean_fake):
  return 0.5 * mean_real + 0.5 * mean_fake


@dataclasses.dataclass(frozen=True)
class ToyCentering(constraint.AugmentedLagrangianConstraint):
  component: str = 'f'
  penalty_weight: float = 1e-2
  v_bound: float = 0.01

  kind = 'toy_centering'

  def local_moments(self, inputs):
    return {f'{self.name}/{side}': tf.reduce_sum(inputs.outputs[side].component(
        self.component)) / inputs.global_batch_size
            for side in (constraint.REAL, constraint.FAKE)}

  def omega(self, moments):
    return centering_omega(moments[f'{self.name}/{constraint.REAL}'],
                           moments[f'{self.name}/{constraint.FAKE}'])

  def after_update(self, critic):
    for variable in critic.v_variables:
      variable.assign(tf.clip_by_value(variable, -self.v_bound, self.v_bound))
