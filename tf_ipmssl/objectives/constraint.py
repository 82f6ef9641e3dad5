"""The constraint interface and registry shared by Fisher, Sobolev, WGAN-GP and weight clipping.

See docs/algorithm.md#constraints. A constraint acts on one critic component h ∈ {f, f+, f-}
and carries its whole behaviour, so that the critic objective and the training steps never
name a constraint kind:

- `local_moments(inputs)`: this replica's contributions (local sum / global batch size) to
  the means over the global batch that its Ω needs, keyed by names that start with
  `self.name`. The objective sums them over replicas before Ω is formed (global_moments.py).
- `omega(moments)`: Ω from those global moments; None for a constraint without one.
- `penalty(omega, multiplier)`: its term in −L_D (λΩ + ρ/2·Ω² for a multiplier constraint).
- `update_multiplier(multiplier, omega)`: its multiplier step after each critic update
  (λ ← λ + ρΩ for a multiplier constraint).
- `after_update(critic)`: runs after every critic update (weight clipping).
- `needs_gradients_at_data` / `needs_gradients_at_interpolates`: which input gradients ∇_x h
  the objective computes for it (`ConstraintInputs.input_gradients`).

The maths stays in the pure module-level functions of each constraint's module; the methods
only call them. A constraint is a frozen dataclass that validates its fields when made. The
registered constraints are a registry.Registry (`REGISTRY`), which lists the library's own
(tf_ipmssl/library.py) at its first use. A new constraint is one module: a subclass of
`Constraint` decorated with `@register`, which lists it under its class name: in the error
messages, in a run's run_config.json (`{'type': name, fields...}`, rebuilt by `get(name)`)
and, through the programs' gin boundary (tf_ipmssl/configurables.py, which follows the
registry), in gin (`ssl.constraints = [@MyConstraint()]`). A name is registered once: a
second class of the same name is refused. `REGISTRY.registered(cls)` registers a class for
the duration of a `with` block only (tests). This module does not import gin.
"""
import dataclasses
from typing import Mapping, Optional

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import registry
from tf_ipmssl.objectives import formulations

# The batches of one critic update that constraints see.
REAL, FAKE, INTERPOLATES = 'real', 'fake', 'interp'


@dataclasses.dataclass(frozen=True)
class ConstraintInputs:
  """What a constraint's local moments are made of (this replica's slice of the batch).

  Attributes:
    outputs: {REAL: CriticOutputs, FAKE: CriticOutputs}, per-example f, f+, f- of [B_local].
    input_gradients: {row: ∇_x h} for this constraint's component h, at the rows it asked for
      (REAL and FAKE, and/or INTERPOLATES); empty when it asked for none.
    global_batch_size: B over all replicas, a scalar of the critic's dtype.
    pairwise_f: whether f is the released code's [B, B] broadcast (docs/algorithm.md#pairwise-f).
  """
  outputs: Mapping[str, formulations.CriticOutputs]
  input_gradients: Mapping[str, tf.Tensor]
  global_batch_size: tf.Tensor
  pairwise_f: bool = False


@dataclasses.dataclass(frozen=True)
class Constraint:
  """Base class. `component` is canonicalised; `name` identifies the constraint in logs,
  multipliers and checkpoints. Subclasses set `kind` and override what they need."""
  component: str = 'f'

  kind = 'constraint'
  # Constraint needs ∇_x h at real and generated points (Sobolev) or at interpolates (GP).
  needs_gradients_at_data = False
  needs_gradients_at_interpolates = False
  # How interpolation weights α are drawn for constraints at interpolates (one per example).
  per_example_alpha = True
  # Whether it has a multiplier λ and a penalty weight ρ (AugmentedLagrangianConstraint).
  has_multiplier = False

  def __post_init__(self):
    object.__setattr__(self, 'component', formulations.canonical_component(self.component))

  @property
  def name(self) -> str:
    return f'{self.kind}_{self.component}'


  def gradient_rows(self) -> set:
    """The batches at which the objective must compute ∇_x of this constraint's component."""
    rows = set()
    if self.needs_gradients_at_data:
      rows |= {REAL, FAKE}
    if self.needs_gradients_at_interpolates:
      rows.add(INTERPOLATES)
    return rows

  def local_moments(self, inputs: ConstraintInputs) -> dict:
    """This replica's contributions to the global means Ω needs, keyed `self.name`/..."""
    del inputs
    return {}

  def omega(self, moments: Mapping[str, tf.Tensor]) -> Optional[tf.Tensor]:
    """Ω from the global moments (all replicas summed); None when the constraint has none."""
    del moments
    return None

  def penalty(self, omega: tf.Tensor, multiplier: Optional[tf.Tensor]) -> Optional[tf.Tensor]:
    """The term added to −L_D: λΩ + ρ/2·Ω² with the multiplier λ, or None."""
    if not self.has_multiplier:
      return None
    return multiplier * omega + 0.5 * self.penalty_weight * tf.square(omega)

  def update_multiplier(self, multiplier: tf.Variable, omega: tf.Tensor) -> None:
    """The multiplier step after a critic update, with that update's Ω (cross-replica
    context): λ ← λ + ρΩ for a multiplier constraint; nothing for the others."""
    if self.has_multiplier:
      multiplier.assign_add(self.penalty_weight * omega)

  def after_update(self, critic) -> None:
    """Runs after every critic update (cross-replica context); nothing by default."""
    del critic


@dataclasses.dataclass(frozen=True)
class AugmentedLagrangianConstraint(Constraint):
  """A constraint with a multiplier λ (λ ← λ + ρ·Ω after each update) and penalty weight ρ,
  the field `penalty_weight` (the paper's ρ_F, ρ_S; gin `Fisher.penalty_weight`)."""
  penalty_weight: float = 0.0

  has_multiplier = True

  def __post_init__(self):
    super().__post_init__()
    errors.check_number(f'{type(self).__name__}.penalty_weight', self.penalty_weight, low=0.0)


def scale_penalty_weights(constraints, scale):
  """The constraints with every augmented-Lagrangian penalty weight ρ multiplied by `scale`
  (`ssl.constraint_penalty_scale`); other constraints (GP's λ_GP, clipping) unchanged."""
  return tuple(
      dataclasses.replace(c, penalty_weight=c.penalty_weight * scale)
      if isinstance(c, AugmentedLagrangianConstraint) and scale != 1.0 else c
      for c in constraints)


def _check_constraint(cls):
  if not (isinstance(cls, type) and issubclass(cls, Constraint)):
    raise TypeError(f'{cls!r} is not a subclass of Constraint')


# The registered constraints by class name, the library's (library.CONSTRAINTS) first.
REGISTRY = registry.Registry('constraint', lambda cls: cls.__name__, _check_constraint,
                             library=('tf_ipmssl.library', 'CONSTRAINTS'))
# Class decorator: the class is a constraint under its class name (ValueError for a name
# already registered).
register = REGISTRY.register


def get(name: str) -> type:
  """The constraint class registered as `name`; a ConfigError naming it when it is not
  registered in this process."""
  cls = REGISTRY.lookup(name)
  if cls is None:
    raise errors.ConfigError(
        f'constraint {name} is not registered in this process (registered: '
        f'{", ".join(REGISTRY.names()) or "none"}); import the module that registers it')
  return cls


def validate_constraints(formulation: str, constraints) -> tuple:
  """Rejects constraint sets that make no sense, with a message that names the fix."""
  constraints = tuple(constraints or ())
  if not constraints:
    raise errors.ConfigError(
        'the critic has no constraint: an unconstrained IPM critic is unbounded. Bind e.g. '
        "`ssl.constraints = [@Fisher()]` (see gin/README.md)")
  allowed = formulations.available_components(formulation)
  names = set()
  for constraint in constraints:
    if not isinstance(constraint, Constraint):
      choices = ', '.join(f'@{name}()' for name in REGISTRY.names())
      raise errors.ConfigError(f'{constraint!r} is not a constraint; use one of {choices}')
    if constraint.component not in allowed:
      raise errors.ConfigError(
          f"constraint {constraint.kind} acts on '{constraint.component}', which the "
          f"'{formulation}' formulation does not have (it has {list(allowed)}); use a K+1 "
          "formulation or put the constraint on 'f'")
    if constraint.name in names:
      raise errors.ConfigError(f'constraint {constraint.name} is given twice')
    names.add(constraint.name)
  return constraints
