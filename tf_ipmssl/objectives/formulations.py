"""Critic formulations: how f, f+ and f- are formed from the two heads.

See docs/algorithm.md#formulations.

With s = S(Φ(x)) ∈ R^K, p = softmax(s) and the fake direction v·Φ(x):

- plain:           f = v·Φ(x); f+ and f- do not exist (the classifier S only shares Φ).
- kplus1:          f+ = Σ_y p_y s_y,        f- = v·Φ(x), f = f+ − f-.
- kplus1_entropy:  f+ = Σ_y p_y log p_y,    f- = v·Φ(x), f = f+ − f-   (the paper's f+^H).
"""
from typing import NamedTuple, Optional

import tensorflow as tf

from tf_ipmssl import errors

FORMULATIONS = ('plain', 'kplus1', 'kplus1_entropy')
COMPONENTS = ('f', 'f_pos', 'f_neg')
_COMPONENT_ALIASES = {'f': 'f', 'f_pos': 'f_pos', 'f+': 'f_pos', 'f_neg': 'f_neg', 'f-': 'f_neg'}


class CriticOutputs(NamedTuple):
  """Per-example critic values, each of shape [B]; f_pos/f_neg are None for 'plain'."""
  f: tf.Tensor
  f_pos: Optional[tf.Tensor]
  f_neg: Optional[tf.Tensor]

  def component(self, name: str) -> tf.Tensor:
    value = getattr(self, canonical_component(name))
    if value is None:
      raise errors.ConfigError(f"component '{name}' does not exist for this formulation")
    return value


def canonical_component(name: str) -> str:
  """Maps 'f', 'f_pos'/'f+', 'f_neg'/'f-' to the canonical component name."""
  try:
    return _COMPONENT_ALIASES[name]
  except KeyError:
    raise errors.ConfigError(
        f"unknown critic component '{name}'; use one of {list(COMPONENTS)} "
        "(aliases 'f+' and 'f-' are accepted)") from None


def check_formulation(formulation: str) -> str:
  if formulation not in FORMULATIONS:
    raise errors.ConfigError(
        f"unknown critic formulation '{formulation}'; use one of {list(FORMULATIONS)}")
  return formulation


def available_components(formulation: str) -> tuple[str, ...]:
  """The components a formulation defines: only f for 'plain', all three otherwise."""
  return ('f',) if check_formulation(formulation) == 'plain' else COMPONENTS


def critic_outputs(fake_logit: tf.Tensor, class_logits: tf.Tensor,
                   formulation: str) -> CriticOutputs:
  """Forms (f, f+, f-) from v·Φ(x) [B] and S(Φ(x)) [B, K] (paper §1, §2.1)."""
  check_formulation(formulation)
  if formulation == 'plain':
    return CriticOutputs(f=fake_logit, f_pos=None, f_neg=None)
  log_p = tf.nn.log_softmax(class_logits, axis=-1)
  p = tf.exp(log_p)
  if formulation == 'kplus1':
    f_pos = tf.reduce_sum(p * class_logits, axis=-1)
  else:  # kplus1_entropy: f+^H = Σ p log p = f+ − log Z, the negative entropy.
    f_pos = tf.reduce_sum(p * log_p, axis=-1)
  return CriticOutputs(f=f_pos - fake_logit, f_pos=f_pos, f_neg=fake_logit)
