"""Tolerances for comparing two computations of one network in float32.

Two computations of the same numbers (another batch size, another process's kernels, a
SavedModel's graph against the eager network) sum the same float32 products in other orders:
oneDNN's and Eigen's kernels block and vectorize sums by batch size and instruction set.
Rounding one sum of n terms in two orders gives results that differ by up to n·eps·Σ|terms|,
and in practice by about sqrt(n)·eps·Σ|terms| (n roundings of ±eps/2 relative error, with
random signs, add up as a random walk). A network adds such errors layer after layer, so
`assert_close_as_float32_sums` allows ULPS of them: ULPS·eps·sqrt(n)·Σ|terms|, with n the
longest sum in the network and Σ|terms| each output's own (`head_term_sizes`), so that an
output that cancels to almost nothing (a fake logit of 1e-10 from terms of 1e-8) gets the
tolerance of its terms, not of its value. Observed: a restored critic's fake logits under
oneDNN's kernels against Eigen's differ by up to 0.09·eps·sqrt(n)·Σ|terms| (2.3e-6 of their
value); ULPS leaves room for deeper sums, other CPUs and other batch shapes.

Bit-for-bit equality stays for one computation done twice: the same graph on the same batch
shapes in one process, and a run against its own resume.
"""
import hashlib

import numpy as np

# One float32 unit in the last place at 1.0 (2^-23).
EPS32 = float(np.finfo(np.float32).eps)
# Units of sqrt(n)·eps·Σ|terms| two computations of a network's outputs may differ by.
ULPS = 8


def longest_sum(network) -> int:
  """The most terms one output of a layer of `network` sums: the largest fan-in of its
  kernels (3·3·C_in of a convolution, the inputs of a dense layer)."""
  return max(int(np.prod(w.shape[:-1])) for w in network.weights if 'kernel' in w.path)


def float32_tolerance(terms: int, term_sizes) -> np.ndarray:
  """ULPS·eps·sqrt(terms)·term_sizes: how far two float32 computations of outputs whose sums
  have `term_sizes` (Σ|terms| of each) may differ."""
  return ULPS * EPS32 * np.sqrt(terms) * np.asarray(term_sizes, np.float64)


def assert_close_as_float32_sums(actual, expected, *, terms, term_sizes, err_msg=''):
  """|actual - expected| <= float32_tolerance(terms, term_sizes), elementwise."""
  actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
  tolerance = float32_tolerance(terms, term_sizes)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  excess = np.abs(actual - expected) - tolerance
  assert np.all(excess <= 0), (
      f'{err_msg}: {int(np.sum(excess > 0))} of {excess.size} differ by more than '
      f'{ULPS}·eps·sqrt({terms})·Σ|terms|; largest difference '
      f'{np.max(np.abs(actual - expected)):.3g}, its tolerance '
      f'{np.ravel(tolerance * np.ones_like(excess))[np.argmax(excess)]:.3g}')


def head_term_sizes(critic, x):
  """Σ|terms| of the critic's two heads on model inputs `x`: of the fake logit v·Φ(x) [B] and
  of the class logits S(Φ(x)) [B, K] (|Φ|·|W| + |bias|)."""
  phi = np.abs(critic.features(x, training=False).numpy().astype(np.float64))
  sizes = []
  for head in (critic.v_head, critic.s_head):
    size = phi @ np.abs(head.kernel.numpy().astype(np.float64))
    if head.bias is not None:
      size = size + np.abs(head.bias.numpy().astype(np.float64))
    sizes.append(size)
  return sizes[0][:, 0], sizes[1]


def probability_tolerance(critic, x) -> float:
  """How far two float32 computations of softmax(S(Φ(x))) may differ: a change δ of the
  logits moves probability p_k by at most 2·p_k·max|δ| <= 2·max|δ|, and the logits may differ
  by float32_tolerance of their terms; plus the softmax's own rounding (a few eps)."""
  _, class_sizes = head_term_sizes(critic, x)
  return float(2 * np.max(float32_tolerance(longest_sum(critic), class_sizes)) + 4 * EPS32)


def assert_labels_agree_where_clear(labels, reference_probabilities, tolerance, err_msg=''):
  """The argmax `labels` of one computation agree with those of `reference_probabilities`
  wherever the reference's two largest probabilities are more than 2·tolerance apart (closer,
  the other computation, within `tolerance`, may rank them the other way); and such images
  exist, so that the check checks something."""
  top_two = np.sort(np.asarray(reference_probabilities), axis=-1)[:, -2:]
  clear = top_two[:, 1] - top_two[:, 0] > 2 * tolerance
  assert clear.any(), f'{err_msg}: no image with a clear label'
  np.testing.assert_array_equal(np.asarray(labels)[clear],
                                np.argmax(reference_probabilities, axis=-1)[clear],
                                err_msg=err_msg)


def computation(network) -> dict:
  """What makes two processes' outputs of `network` one computation, to compare between them:
  its weights (SHA-256 of their bytes), Grappler's options (training/precision.py turns its
  arithmetic optimizer off) and whether TensorFlow runs oneDNN's kernels."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.python.util import _pywrap_util_port  # pylint: disable=g-import-not-at-top
  weights = hashlib.sha256()
  for variable in network.weights:
    weights.update(np.asarray(variable.numpy()).tobytes())
  return {'weights': weights.hexdigest(),
          'grappler': {k: str(v) for k, v in
                       sorted(tf.config.optimizer.get_experimental_options().items())},
          'onednn': bool(_pywrap_util_port.IsMklEnabled())}
