"""Training options beyond the paper: early stopping, the weight-averaged critic, the IPM ramp-up."""
import json
import os
import subprocess
import sys

from tests.training import runs


def _metrics(model_dir):
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    return json.load(f)


def test_early_stopping_stops_after_the_patience_and_the_minimum(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = str(tmp_path / 'run')
  # A learning rate of 0 keeps the weights: the first evaluation (step 2) stays the best.
  bindings = runs.tiny_bindings(data_dir, **{
      'train.mode': "'supervised'", 'train.constraints': '[]', 'train.steps': 40,
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
                                             'train.ipm_rampup_updates': 3})
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
  evaluate = subprocess.run(
      [sys.executable, str(runs.REPO_ROOT / 'bin' / 'evaluate'), f'--model_dir={model_dir}'],
      capture_output=True, text=True, env=runs.environment(), timeout=300)
  assert evaluate.returncode == 0, evaluate.stderr[-2000:]
  assert json.loads(evaluate.stdout.strip().splitlines()[-1])['error'] == (
      _metrics(model_dir)['final']['test_error'])
