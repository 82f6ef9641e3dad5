"""The full critic objective −L_D (algorithm.md#critic-objective): its value against NumPy, its gradient against
central finite differences of that value in float64.

The surrogate loss is what the trainer differentiates; its weight gradient must equal the
gradient of the true objective values['critic_loss'] (same batches, same α seed), including
the ρ/2·Ω² terms and the second derivatives behind Sobolev and GP. Penalty weights ρ are set
large (the paper's 1e-7 would hide an error in those terms) and λ's nonzero.
"""
import numpy as np
import pytest
import tensorflow as tf

from tests.objectives import gradient_checks
from tests.objectives import numpy_reference
from tests.objectives import tiny_critics
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev

pytestmark = pytest.mark.numerics

_ALPHA_SEED = tf.constant([4, 2], tf.int32)

# name: (formulation, constraints, multipliers, has_batch_norm, reference_pairwise_f)
_CASES = {
    'kplus1_fisher_f_sobolev_fneg_batched': (
        'kplus1', [fisher.Fisher('f', 0.3), sobolev.Sobolev('f-', 0.2)],
        {'fisher_f': 0.7, 'sobolev_f_neg': -0.4}, False, False),
    'kplus1_gp_fneg_batched': (
        'kplus1', [gradient_penalty.GradientPenalty('f-')], {}, False, False),
    'kplus1_fisher_fpos_sobolev_f_separate': (
        'kplus1', [fisher.Fisher('f+', 0.5), sobolev.Sobolev('f', 0.1)],
        {'fisher_f_pos': -0.6, 'sobolev_f': 0.9}, True, False),
    'entropy_fisher_fpos_sobolev_f_gp_f_batched': (
        'kplus1_entropy', [fisher.Fisher('f+', 0.4), sobolev.Sobolev('f', 0.3),
                           gradient_penalty.GradientPenalty('f', 2.0)],
        {'fisher_f_pos': 0.5, 'sobolev_f': -0.3}, False, False),
    'entropy_fisher_f_gp_fneg_separate': (
        'kplus1_entropy', [fisher.Fisher('f', 0.2),
                           gradient_penalty.GradientPenalty('f-', per_example_alpha=False)],
        {'fisher_f': 1.1}, True, False),
    'plain_fisher_sobolev_separate': (
        'plain', [fisher.Fisher('f', 0.3), sobolev.Sobolev('f', 0.3)],
        {'fisher_f': 0.2, 'sobolev_f': 0.4}, True, False),
    'kplus1_pairwise_fisher_f_sobolev_f_gp_fneg': (
        'kplus1', [fisher.Fisher('f', 0.01), sobolev.Sobolev('f', 1e-4),
                   gradient_penalty.GradientPenalty('f-', 1.0)],
        {'fisher_f': 0.3, 'sobolev_f': 0.05}, False, True),
}


def _case(case, critic_seed, batch_seed):
  """A tiny critic (with batch norm where the case has it), random batches, the kwargs."""
  has_batch_norm = _CASES[case][3]
  critic = tiny_critics.MlpCritic(has_batch_norm=has_batch_norm, seed=critic_seed)
  return critic, tiny_critics.random_batches(seed=batch_seed), _kwargs(case)


def _kwargs(case):
  formulation, constraints, multipliers, _, pairwise = _CASES[case]
  return dict(formulation=formulation, constraints=constraints, multipliers=multipliers,
              reference_pairwise_f=pairwise, alpha_seed=_ALPHA_SEED, lambda_ce=1.5)


@pytest.mark.parametrize('case', sorted(_CASES))
def test_critic_loss_value_matches_numpy(case):
  critic, batches, kwargs = _case(case, critic_seed=11, batch_seed=12)
  result = gradient_checks.run_critic_objective(critic, batches, **kwargs)
  alpha = gradient_checks.interpolation_alpha(kwargs['constraints'], 4, _ALPHA_SEED)
  expected, omegas = numpy_reference.critic_loss(
      numpy_reference.NumpyMlp(critic.numpy_params()), *batches,
      formulation=kwargs['formulation'], constraints=kwargs['constraints'],
      multipliers=kwargs['multipliers'], lambda_ce=1.5, alpha=alpha,
      pairwise=kwargs['reference_pairwise_f'])
  np.testing.assert_allclose(result.values['critic_loss'].numpy(), expected, rtol=1e-10)
  for name, omega in omegas.items():
    np.testing.assert_allclose(result.values[f'omega/{name}'].numpy(), omega, rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize('case', sorted(_CASES))
def test_surrogate_gradient_matches_finite_differences(case):
  critic, batches, kwargs = _case(case, critic_seed=13, batch_seed=14)
  gradient_checks.assert_surrogate_matches_finite_differences(critic, batches, kwargs)


def test_batch_norm_critic_gradient_matches_finite_differences():
  """A real batch-norm layer: separate passes, and ∇_x h then mixes the examples of a pass."""
  critic = tiny_critics.MlpCritic(batch_norm=True, seed=15)
  batches = tiny_critics.random_batches(seed=16)
  kwargs = dict(formulation='kplus1', alpha_seed=_ALPHA_SEED, multipliers={
      'fisher_f': 0.4, 'sobolev_f_neg': -0.2},
                constraints=[fisher.Fisher('f', 0.3), sobolev.Sobolev('f-', 0.2),
                             gradient_penalty.GradientPenalty('f+', 1.0)])
  gradient_checks.assert_surrogate_matches_finite_differences(critic, batches, kwargs)


def test_batch_norm_critic_sees_each_batch_in_its_own_pass():
  critic = tiny_critics.MlpCritic(batch_norm=True, seed=17)
  batches = tiny_critics.random_batches(seed=18)
  result = gradient_checks.run_critic_objective(
      critic, batches, formulation='kplus1', constraints=[fisher.Fisher()],
      multipliers={'fisher_f': 0.0})

  def mean_f(x):
    fake, logits = critic(tf.constant(x), training=True)
    return np.mean(numpy_reference.components(fake.numpy(), logits.numpy(), 'kplus1')['f'])

  np.testing.assert_allclose(result.values['ipm'].numpy(),
                             mean_f(batches[2]) - mean_f(batches[3]), rtol=1e-12)
  stacked = np.concatenate(batches[2:])
  fake, logits = critic(tf.constant(stacked), training=True)
  f_joint = numpy_reference.components(fake.numpy(), logits.numpy(), 'kplus1')['f']
  joint_ipm = f_joint[:4].mean() - f_joint[4:].mean()
  assert abs(joint_ipm - result.values['ipm'].numpy()) > 1e-6  # One joint pass would differ.


class _RecordingCritic:
  """Calls `critic` and records the batch size of each call."""

  def __init__(self, critic):
    self.critic = critic
    self.has_batch_norm = critic.has_batch_norm
    self.batch_sizes = []

  @property
  def trainable_variables(self):
    return self.critic.trainable_variables

  def __call__(self, x, training=False):
    self.batch_sizes.append(int(x.shape[0]))
    return self.critic(x, training=training)


@pytest.mark.parametrize('case,stacked_sizes', [
    # One call for the rows whose input gradient a constraint needs, one for the others.
    ('kplus1_fisher_f_sobolev_fneg_batched', [4, 8]),  # Sobolev: real and generated.
    ('entropy_fisher_fpos_sobolev_f_gp_f_batched', [4, 12]),  # and the interpolates.
    ('kplus1_pairwise_fisher_f_sobolev_f_gp_fneg', [4, 12]),  # B·∇f of the broadcast f.
])
def test_batched_and_separate_forward_agree_for_a_per_example_critic(case, stacked_sizes):
  batches = tiny_critics.random_batches(seed=19)
  kwargs = _kwargs(case)
  results = {}
  for forward in ('batched', 'separate'):
    critic = _RecordingCritic(tiny_critics.MlpCritic(seed=20))
    results[forward] = gradient_checks.surrogate_gradients(critic, batches, forward=forward,
                                                           **kwargs)
    # Each mode takes its own path: stacked calls, or one call per batch of 4.
    expected = stacked_sizes if forward == 'batched' else [4] * (sum(stacked_sizes) // 4)
    assert sorted(critic.batch_sizes) == expected
  (grads_a, res_a), (grads_b, res_b) = results['batched'], results['separate']
  assert set(res_a.values) == set(res_b.values)
  for key, value in res_a.values.items():
    np.testing.assert_allclose(value.numpy(), res_b.values[key].numpy(), rtol=1e-12)
  for a, b in zip(grads_a, grads_b):
    np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)


def test_auto_forward_follows_batch_norm():
  batches = tiny_critics.random_batches(seed=23)
  kwargs = _kwargs('kplus1_fisher_f_sobolev_fneg_batched')
  for has_batch_norm, sizes in ((False, [4, 8]), (True, [4, 4, 4])):
    critic = _RecordingCritic(tiny_critics.MlpCritic(has_batch_norm=has_batch_norm, seed=24))
    gradient_checks.run_critic_objective(critic, batches, **kwargs)
    assert sorted(critic.batch_sizes) == sizes


def test_batched_forward_refuses_a_batch_norm_critic():
  critic = tiny_critics.MlpCritic(batch_norm=True, seed=25)
  batches = tiny_critics.random_batches(seed=26)
  kwargs = dict(formulation='kplus1', constraints=[fisher.Fisher()],
                multipliers={'fisher_f': 0.0})
  with pytest.raises(ValueError, match='batch norm'):
    gradient_checks.run_critic_objective(critic, batches, forward='batched', **kwargs)
  with pytest.raises(ValueError, match='unknown critic forward mode'):
    gradient_checks.run_critic_objective(critic, batches, forward='stacked', **kwargs)
  for forward in ('auto', 'separate'):  # Both run one pass per batch.
    gradient_checks.run_critic_objective(critic, batches, forward=forward, **kwargs)


def test_float32_critic_under_tf_function_matches_eager():
  """The trainer's setting: float32 weights and λ variables, inside a tf.function."""
  critic = tiny_critics.MlpCritic(seed=21, dtype='float32')
  batches = tiny_critics.random_batches(seed=22, dtype=np.float32)
  multipliers = {'fisher_f': tf.Variable(0.5), 'sobolev_f_neg': tf.Variable(-0.25)}
  kwargs = dict(formulation='kplus1', multipliers=multipliers, alpha_seed=_ALPHA_SEED,
                constraints=[fisher.Fisher('f', 0.3), sobolev.Sobolev('f-', 0.2),
                             gradient_penalty.GradientPenalty('f')])

  eager_grads, eager = gradient_checks.surrogate_gradients(critic, batches, **kwargs)

  @tf.function
  def traced():
    with tf.GradientTape() as tape:
      result = gradient_checks.run_critic_objective(critic, batches, **kwargs)
    return tape.gradient(result.surrogate_loss, critic.trainable_variables), result.values

  graph_grads, graph = traced()
  np.testing.assert_allclose(graph['critic_loss'].numpy(), eager.values['critic_loss'].numpy(),
                             rtol=1e-5)
  assert eager.values['critic_loss'].dtype == tf.float32
  for a, b in zip(eager_grads, graph_grads):
    np.testing.assert_allclose(b.numpy(), a, rtol=1e-4, atol=1e-6)
  # And against NumPy in float64 on the same float32 weights, batches and α (float32's
  # rounding of the sums apart).
  alpha = gradient_penalty.interpolation_weights(4, _ALPHA_SEED, dtype=tf.float32).numpy()
  params = {k: v.astype(np.float64) for k, v in critic.numpy_params().items()}
  x_l, y_l, x_p, x_q = batches
  expected, omegas = numpy_reference.critic_loss(
      numpy_reference.NumpyMlp(params), x_l.astype(np.float64), y_l, x_p.astype(np.float64),
      x_q.astype(np.float64), formulation='kplus1', constraints=kwargs['constraints'],
      multipliers={'fisher_f': 0.5, 'sobolev_f_neg': -0.25}, lambda_ce=1.5,
      alpha=alpha.astype(np.float64))
  np.testing.assert_allclose(graph['critic_loss'].numpy(), expected, rtol=1e-5, atol=1e-6)
  for name, omega in omegas.items():
    np.testing.assert_allclose(graph[f'omega/{name}'].numpy(), omega, rtol=1e-5, atol=1e-6,
                               err_msg=name)
