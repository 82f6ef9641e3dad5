"""The constraint interface shared by Fisher, Sobolev, WGAN-GP and weight clipping.

See docs/algorithm.md#constraints.

A constraint acts on one critic component h ∈ {f, f+, f-}. Penalty constraints express
their Ω through *moments*: means over the global batch of per-example quantities, returned
as replica-local contributions (local sum / global batch size) so that the trainer can
all-reduce them before Ω is formed (see `global_moments.py`).
"""
import dataclasses
from typing import Optional

from tf_ipmssl import errors
from tf_ipmssl.objectives import formulations


@dataclasses.dataclass(frozen=True)
class Constraint:
  """Base class. `component` is canonicalised; `name` identifies the constraint in logs."""
  component: str = 'f'

  kind = 'constraint'
  # Constraint needs ∇_x h at real and generated points (Sobolev) or at interpolates (GP).
  needs_gradients_at_data = False
  needs_gradients_at_interpolates = False

  def __post_init__(self):
    object.__setattr__(self, 'component', formulations.canonical_component(self.component))

  @property
  def name(self) -> str:
    return f'{self.kind}_{self.component}'

  @property
  def rho(self) -> Optional[float]:
    """Augmented-Lagrangian penalty weight; None for constraints without a multiplier."""
    return None

  @property
  def has_multiplier(self) -> bool:
    return self.rho is not None


def validate_constraints(formulation: str, constraints) -> tuple:
  """Rejects constraint sets that make no sense, with a message that names the fix."""
  constraints = tuple(constraints or ())
  if not constraints:
    raise errors.ConfigError(
        'the critic has no constraint: an unconstrained IPM critic is unbounded. Bind e.g. '
        "`train.constraints = [@Fisher()]` (see gin/README.md)")
  allowed = formulations.available_components(formulation)
  names = set()
  for constraint in constraints:
    if not isinstance(constraint, Constraint):
      raise errors.ConfigError(
          f'{constraint!r} is not a constraint; use @Fisher(), @Sobolev(), '
          '@GradientPenalty() or @WeightClipping()')
    if constraint.component not in allowed:
      raise errors.ConfigError(
          f"constraint {constraint.kind} acts on '{constraint.component}', which the "
          f"'{formulation}' formulation does not have (it has {list(allowed)}); use a K+1 "
          "formulation or put the constraint on 'f'")
    if constraint.name in names:
      raise errors.ConfigError(f'constraint {constraint.name} is given twice')
    names.add(constraint.name)
  return constraints
