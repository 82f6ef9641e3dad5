"""A supervised run written before a supervised run stopped building a generator
(previous_layout_supervised/: its checkpoint holds a generator and its optimizer) still
restores, evaluates and exports; a new supervised run's checkpoint holds no generator."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import tensorflow as tf

from tests.training import runs

PREVIOUS = runs.REPO_ROOT / 'tests' / 'training' / 'previous_layout_supervised'


def _copy_previous_run(tmp_path):
  """The recorded run, its config.gin pointed at this test's (identical) fake data."""
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = tmp_path / 'previous'
  shutil.copytree(PREVIOUS, model_dir)
  config = model_dir / 'config.gin'
  lines = [f'build_ssl_data.data_dir = {data_dir!r}' if line.startswith(
      'build_ssl_data.data_dir') else line for line in config.read_text().splitlines()]
  config.write_text('\n'.join(lines) + '\n')
  return str(model_dir)


def _program(name, *args):
  result = subprocess.run([sys.executable, str(runs.REPO_ROOT / 'bin' / name), *args],
                          capture_output=True, text=True, timeout=600, env=runs.environment(),
                          cwd=str(runs.REPO_ROOT))
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout


def test_previous_supervised_run_restores_evaluates_and_exports(tmp_path):
  model_dir = _copy_previous_run(tmp_path)
  saved = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', 'ckpt-4'))
  assert any(k.startswith('generator/') for k in saved)  # The previous layout.

  run = runs.restore_run(model_dir)
  assert run.generator is None and run.generator_optimizer is None
  critic, _ = run.restore_critic('latest', 'trained')
  np.testing.assert_array_equal(critic.s_head.kernel.numpy(),
                                saved['critic/s_head/_kernel/.ATTRIBUTES/VARIABLE_VALUE'])

  out = json.loads(_program('evaluate', f'--model_dir={model_dir}', '--checkpoint=best',
                            '--split=validation'))
  metrics = json.load(open(os.path.join(model_dir, 'metrics.json')))
  assert out['error'] == metrics['best']['validation_error']
  export_dir = os.path.join(model_dir, 'export_latest')
  _program('export', f'--model_dir={model_dir}', '--checkpoint=latest')
  assert tf.saved_model.contains_saved_model(export_dir)
