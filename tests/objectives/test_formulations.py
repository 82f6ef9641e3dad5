"""Critic formulations f, f+, f- (docs/algorithm.md#formulations) against NumPy."""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import numpy_reference
from tf_ipmssl import errors
from tf_ipmssl.objectives import formulations

pytestmark = pytest.mark.numerics


def _logits(seed=0, batch=5, classes=4, scale=3.0):
  rng = np.random.default_rng(seed)
  return rng.normal(size=batch), scale * rng.normal(size=(batch, classes))


def _outputs(fake, logits, formulation):
  return formulations.critic_outputs(tf.constant(fake), tf.constant(logits), formulation)


def test_plain_is_the_fake_logit_and_has_no_positive_or_negative_part():
  fake, logits = _logits()
  out = _outputs(fake, logits, 'plain')
  np.testing.assert_array_equal(out.f.numpy(), fake)
  assert out.f_pos is None and out.f_neg is None
  with pytest.raises(errors.ConfigError, match="'f_pos' does not exist"):
    out.component('f_pos')


def test_kplus1_matches_numpy():
  fake, logits = _logits(1)
  out = _outputs(fake, logits, 'kplus1')
  p = np.exp(logits - logits.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  f_pos = (p * logits).sum(-1)
  np.testing.assert_allclose(out.f_pos.numpy(), f_pos, rtol=1e-12)
  np.testing.assert_array_equal(out.f_neg.numpy(), fake)
  np.testing.assert_allclose(out.f.numpy(), f_pos - fake, rtol=1e-12)
  # Aliases reach the same tensors.
  np.testing.assert_array_equal(out.component('f+').numpy(), out.f_pos.numpy())
  np.testing.assert_array_equal(out.component('f-').numpy(), fake)


def test_entropy_variant_is_negative_entropy():
  fake, logits = _logits(2)
  out = _outputs(fake, logits, 'kplus1_entropy')
  p = np.exp(logits - logits.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  neg_entropy = (p * np.log(p)).sum(-1)
  np.testing.assert_allclose(out.f_pos.numpy(), neg_entropy, rtol=1e-12)
  np.testing.assert_allclose(out.f.numpy(), neg_entropy - fake, rtol=1e-12)
  # −log K ≤ Σ p log p ≤ 0.
  assert np.all(out.f_pos.numpy() <= 0.0)
  assert np.all(out.f_pos.numpy() >= -np.log(logits.shape[1]) - 1e-12)


def test_entropy_variant_is_kplus1_minus_log_partition():
  """f+^H = Σ p (s − log Z) = f+ − logsumexp(s)."""
  fake, logits = _logits(3)
  entropy = _outputs(fake, logits, 'kplus1_entropy')
  p = np.exp(logits - logits.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  f_pos = (p * logits).sum(-1)  # The K+1 f+, Σ p s, in NumPy.
  np.testing.assert_allclose(entropy.f_pos.numpy(), f_pos - numpy_reference.logsumexp(logits),
                             rtol=1e-12, atol=1e-12)


def test_extreme_logits_stay_finite_and_correct():
  fake = np.zeros(2)
  logits = np.array([[200.0, -200.0, 0.0], [-500.0, 500.0, 499.0]])
  for formulation in ('kplus1', 'kplus1_entropy'):
    out = _outputs(fake, logits, formulation)
    np.testing.assert_allclose(
        out.f_pos.numpy(), numpy_reference.components(fake, logits, formulation)['f_pos'],
        rtol=1e-10, atol=1e-12)
    assert np.all(np.isfinite(out.f_pos.numpy()))


def test_numpy_reference_agrees_on_all_formulations():
  fake, logits = _logits(4)
  for formulation in formulations.FORMULATIONS:
    out = _outputs(fake, logits, formulation)
    expected = numpy_reference.components(fake, logits, formulation)
    for name in formulations.available_components(formulation):
      np.testing.assert_allclose(out.component(name).numpy(), expected[name], rtol=1e-12)


def test_components_per_formulation_and_aliases():
  assert formulations.available_components('plain') == ('f',)
  assert formulations.available_components('kplus1') == ('f', 'f_pos', 'f_neg')
  assert formulations.canonical_component('f+') == 'f_pos'
  assert formulations.canonical_component('f-') == 'f_neg'
  with pytest.raises(errors.ConfigError, match='unknown critic formulation'):
    formulations.critic_outputs(tf.zeros([1]), tf.zeros([1, 2]), 'kplus2')
