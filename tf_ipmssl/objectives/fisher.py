"""Fisher IPM constraint: Ω_F = ½ E_P[h²] + ½ E_Q[h²] − 1, augmented Lagrangian.

See docs/algorithm.md#fisher.
"""
import dataclasses

import tensorflow as tf

from tf_ipmssl.objectives import constraint

_PAIRWISE_PARTS = ('pos2', 'neg2', 'pos', 'neg')


def fisher_omega(mean_sq_real, mean_sq_fake):
  """Ω_F from the second moments E_P[h²] and E_Q[h²]."""
  return 0.5 * mean_sq_real + 0.5 * mean_sq_fake - 1.0


def second_moment(h, global_batch_size):
  """Replica-local contribution Σ h² / B to E[h²] over the global batch."""
  return tf.reduce_sum(tf.square(h)) / global_batch_size


def pairwise_second_moment_parts(f_pos, f_neg, global_batch_size):
  """Moments for the mean over all pairs (i, j) of (f+(x_j) − f-(x_i))².

  That mean is E[f+²] + E[f-²] − 2 E[f+] E[f-]: the released reference code's broadcast f
  (docs/algorithm.md#pairwise-f). Returned as local contributions.
  """
  b = global_batch_size
  return {'pos2': tf.reduce_sum(tf.square(f_pos)) / b, 'neg2': tf.reduce_sum(tf.square(f_neg)) / b,
          'pos': tf.reduce_sum(f_pos) / b, 'neg': tf.reduce_sum(f_neg) / b}


def pairwise_second_moment(parts):
  return parts['pos2'] + parts['neg2'] - 2.0 * parts['pos'] * parts['neg']


@dataclasses.dataclass(frozen=True)
class Fisher(constraint.AugmentedLagrangianConstraint):
  """Fisher constraint on component h with multiplier λ_F and penalty ρ_F (paper: 1e-7)."""
  penalty_weight: float = 1e-7

  kind = 'fisher'

  def local_moments(self, inputs):
    """E_P[h²] and E_Q[h²]; under the pairwise f, on f, the parts of its all-pairs mean."""
    moments = {}
    pairwise = inputs.pairwise_f and self.component == 'f'
    for side in (constraint.REAL, constraint.FAKE):
      outputs = inputs.outputs[side]
      if pairwise:
        parts = pairwise_second_moment_parts(outputs.f_pos, outputs.f_neg,
                                             inputs.global_batch_size)
        moments.update({f'{self.name}/{side}/{k}': v for k, v in parts.items()})
      else:
        moments[f'{self.name}/{side}'] = second_moment(outputs.component(self.component),
                                                       inputs.global_batch_size)
    return moments

  def omega(self, moments):
    sides = (constraint.REAL, constraint.FAKE)
    if f'{self.name}/{constraint.REAL}' in moments:
      sq = [moments[f'{self.name}/{side}'] for side in sides]
    else:  # The pairwise f's parts.
      sq = [pairwise_second_moment({k: moments[f'{self.name}/{side}/{k}']
                                    for k in _PAIRWISE_PARTS}) for side in sides]
    return fisher_omega(*sq)
