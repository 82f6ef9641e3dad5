"""Training options beyond the paper: early stopping, the weight-averaged critic, the IPM ramp-up."""
import json
import os
import types

import numpy as np
import pytest

from tests.training import runs


def _metrics(model_dir):
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    return json.load(f)


def test_early_stopping_stops_after_the_patience_and_the_minimum(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = str(tmp_path / 'run')
  # A learning rate of 0 keeps the weights: the first evaluation (step 2) stays the best.
  bindings = runs.tiny_bindings(data_dir, **{
      'train.mode': "'supervised'", 'ssl.constraints': '[]', 'train.steps': 40,
      'train.critic_learning_rate': 0.0, 'train.early_stopping_patience': 4,
      'train.early_stopping_min_steps': 10})
  result = runs.run_train(model_dir, bindings)
  assert result.returncode == 0, result.stderr[-2000:]
  # Patience alone would stop at step 6; the minimum of 10 steps holds it to step 10.
  assert 'Stopping early at step 10: no validation improvement since step 2' in result.stdout
  metrics = _metrics(model_dir)
  assert (metrics['stopped_early'], metrics['step'], metrics['finished']) == (10, 10, True)
  assert metrics['best']['step'] == 2
  # The stop's own evaluation did not improve; its test error is still computed (weights
  # unchanged, so it equals the best step's).
  assert metrics['final']['step'] == 10
  assert metrics['final']['test_error'] == metrics['best']['test_error']
  again = runs.run_train(model_dir, bindings)
  assert again.returncode == 0 and 'nothing to do' in again.stdout


def test_averaged_critic_is_evaluated_checkpointed_and_restored(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = str(tmp_path / 'run')
  bindings = runs.tiny_bindings(data_dir, **{'train.critic_ema_decay': 0.5,
                                             'ssl.ipm_rampup_updates': 3})
  result = runs.run_train(model_dir, bindings)
  assert result.returncode == 0, result.stderr[-2000:]
  values = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', 'ckpt-4'))
  assert any(k.startswith('averaged_critic/body/') for k in values)
  # After 8 critic updates the average differs from the trained weights.
  for head in ('s_head', 'v_head'):
    key = f'{head}/_kernel/.ATTRIBUTES/VARIABLE_VALUE'
    averaged, trained = values[f'averaged_critic/{key}'], values[f'critic/{key}']
    assert averaged.shape == trained.shape and (averaged != trained).any()
  # bin/evaluate restores the averaged critic: its error is the one the run logged.
  evaluate = runs.run_program('evaluate', f'--model_dir={model_dir}')
  assert evaluate.returncode == 0, evaluate.stderr[-2000:]
  assert json.loads(evaluate.stdout.strip().splitlines()[-1])['error'] == (
      _metrics(model_dir)['final']['test_error'])
  # The trained critic itself on request (latest checkpoint only), the averaged by default.
  from tf_ipmssl import configurables  # pylint: disable=g-import-not-at-top,unused-import
  from tf_ipmssl import errors  # pylint: disable=g-import-not-at-top
  for weights, prefix in (('evaluated', 'averaged_critic'), ('trained', 'critic')):
    critic, _ = runs.restore_run(model_dir).restore_critic('latest', weights)
    kernel = critic.s_head.kernel.numpy()
    np.testing.assert_array_equal(
        kernel, values[f'{prefix}/s_head/_kernel/.ATTRIBUTES/VARIABLE_VALUE'])
  with pytest.raises(errors.UserError, match='only in the latest checkpoint'):
    runs.restore_run(model_dir).restore_critic('best', 'trained')


def test_training_length_in_critic_updates():
  """train.critic_updates gives every n_c the same number of critic updates (rounded up to
  whole steps); supervised runs make one update per step; steps overrides it."""
  from tf_ipmssl import configurables  # pylint: disable=g-import-not-at-top,unused-import
  from tf_ipmssl.objectives import fisher  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import run_config  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import trainer  # pylint: disable=g-import-not-at-top
  data = types.SimpleNamespace(labeled_images=[0] * 100, unlabeled_images=[0] * 1000)

  def length(mode='ssl', n_c=2, **bindings):
    settings = {'constraints': [fisher.Fisher()], 'critic_iterations': n_c}
    return trainer.training_length(data, run_config.RunConfig.create(
        mode=mode, settings=settings if mode == 'ssl' else {}, batch_size=64, epochs=350,
        critic_updates=1800, **bindings))
  for n_c, steps in ((1, 1800), (2, 900), (5, 360), (7, 258)):
    assert (length(n_c=n_c).total_steps, length(n_c=n_c).critic_updates_per_step) == (steps, n_c)
  assert length('supervised', 5).total_steps == 1800
  assert length(steps=12).total_steps == 12


def test_scale_penalty_weights_keeps_ratios_and_leaves_other_constraints():
  from tf_ipmssl import configurables  # pylint: disable=g-import-not-at-top,unused-import
  from tf_ipmssl.objectives import constraint  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.objectives import fisher, gradient_penalty, sobolev  # pylint: disable=g-import-not-at-top
  given = (fisher.Fisher(component='f', penalty_weight=1e-7),
           sobolev.Sobolev(component='f-', penalty_weight=1e-8),
           gradient_penalty.GradientPenalty(component='f', weight=10.0))
  scaled = constraint.scale_penalty_weights(given, 1000.0)
  assert [c.penalty_weight for c in scaled[:2]] == [1e-7 * 1000.0, 1e-8 * 1000.0]
  assert scaled[2] == given[2] and [c.component for c in scaled] == ['f', 'f_neg', 'f']
  assert constraint.scale_penalty_weights(given, 1.0) == given


def test_each_critic_update_moves_lambda_by_rho_times_its_own_omega(tmp_path):
  """λ ← λ + ρΩ after every critic update, with that update's Ω: at n_c = 1 a step is one
  critic update, so from λ = 0 each logged λ is the previous one plus ρ times the Ω logged
  with it (float32 arithmetic, as the multiplier's variable)."""
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = str(tmp_path / 'run')
  rho = 0.05
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{
      'ssl.critic_iterations': 1, 'train.steps': 5, 'train.log_every': 1,
      'ssl.constraint_penalty_scale': 1.0, 'Fisher.penalty_weight': rho}))
  assert result.returncode == 0, result.stderr[-2000:]
  scalars = event_files.read_scalars(os.path.join(model_dir, 'train'))
  assert [s for s, _ in scalars['lambda/fisher_f']] == [1, 2, 3, 4, 5]
  assert [s for s, _ in scalars['omega/fisher_f']] == [1, 2, 3, 4, 5]
  omegas = np.array([v for _, v in scalars['omega/fisher_f']], np.float32)
  lambdas = np.array([v for _, v in scalars['lambda/fisher_f']], np.float32)
  assert np.all(omegas != 0)
  expected, lam = [], np.float32(0)
  for omega in omegas:
    lam = np.float32(lam + np.float32(rho) * omega)
    expected.append(lam)
  np.testing.assert_allclose(lambdas, expected, rtol=1e-6, atol=1e-9)


def test_scales_and_critic_updates_in_a_run(tmp_path):
  """The learning rates a run uses are the bound ones times train.learning_rate_scale, its ρ
  the bound ones times ssl.constraint_penalty_scale; 7 critic updates at n_c = 2 are 4
  steps."""
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = str(tmp_path / 'run')
  bindings = runs.tiny_bindings(data_dir, **{
      'train.steps': None, 'train.critic_updates': 7, 'train.log_every': 1,
      'train.critic_learning_rate': 2e-4, 'train.generator_learning_rate': 1e-4,
      'train.learning_rate_scale': 5.0, 'ssl.constraint_penalty_scale': 1000.0,
      'Fisher.penalty_weight': 1e-7})
  result = runs.run_train(model_dir, bindings)
  assert result.returncode == 0, result.stderr[-2000:]
  assert 'Finished 4 steps' in result.stdout
  assert 'ρ: fisher_f 0.0001)' in result.stdout
  scalars = event_files.read_scalars(os.path.join(model_dir, 'train'))
  for tag, rate in (('learning_rate/critic', 1e-3), ('learning_rate/generator', 5e-4)):
    assert [v for _, v in scalars[tag]] == pytest.approx([rate] * 4, rel=1e-6)
  # The scaled ρ = 1e-4 is the one λ moves by (λ's step itself is checked exactly above):
  # Ω ≈ −1 for a critic whose f is still near 0, so |λ| ≈ 2e-4 after the first step's two
  # updates, where the unscaled ρ would give 2e-7.
  lambdas = [v for _, v in scalars['lambda/fisher_f']]
  assert 1e-5 < abs(lambdas[0]) < 1e-4 * 50
