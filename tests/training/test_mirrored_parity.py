"""MirroredStrategy over two logical CPU devices computes what one device computes."""
import subprocess
import sys

import pytest

from tests.training import runs

pytestmark = pytest.mark.numerics

_SCRIPT = r'''
import sys
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices('CPU')[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
import gin
from tf_ipmssl import configurables
from tf_ipmssl.training import trainer
from tests.training import runs

data_dir, out_dir = sys.argv[1], sys.argv[2]
values = {}
for kind in ('default', 'mirrored'):
  bindings = runs.tiny_bindings(data_dir, **{
      'train.steps': 1, 'train.export_classifier': False, 'train.deterministic_ops': True,
      'build_critic.input_dropout': 0.0, 'build_critic.dropout': 0.0,
      'ssl.constraints': '[@Fisher(), @Sobolev()]', 'Sobolev.component': "'f_neg'",
      'Fisher.penalty_weight': 0.1, 'Sobolev.penalty_weight': 0.1,
      'make_strategy.kind': repr(kind),
      'make_strategy.devices': "['/cpu:0', '/cpu:1']" if kind == 'mirrored' else 'None'})
  gin.clear_config()
  configurables.parse([runs.SSL_GIN], bindings)
  trainer.train(f'{out_dir}/{kind}', configurables.run_config())
  values[kind] = runs.checkpoint_values(tf.train.latest_checkpoint(f'{out_dir}/{kind}/checkpoints'))
assert values['default'].keys() == values['mirrored'].keys()
worst = 0.0
for name, a in values['default'].items():
  if name.startswith('best/'):
    # Validation error of a just-initialised classifier: logits are near-ties, so float32
    # rounding may flip one of 20 argmaxes. The weights and λ below are the state compared.
    continue
  b = values['mirrored'][name]
  if np.issubdtype(np.asarray(a).dtype, np.floating):
    worst = max(worst, float(np.max(np.abs(a - b), initial=0.0)))
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5, err_msg=name)
  else:
    np.testing.assert_array_equal(b, a, err_msg=name)
lam = [k for k in values['default'] if 'lambda' in k or 'multipliers' in k]
assert lam, list(values['default'])
print('PARITY_OK', len(values['default']), worst)
'''


def test_one_step_under_mirrored_strategy_matches_single_device(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  result = subprocess.run([sys.executable, '-c', _SCRIPT, data_dir, str(tmp_path)],
                          capture_output=True, text=True, env=runs.environment(), timeout=600,
                          cwd=str(runs.REPO_ROOT))
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
  assert 'PARITY_OK' in result.stdout
