"""The bfloat16 pre-flight check: the probe runs where bfloat16 convolutions do, and a
machine whose kernels cannot gets one ConfigError naming the fix."""
import os

import pytest

from tf_ipmssl import errors
from tf_ipmssl.run_dir import cpu_info
from tf_ipmssl.training import precision

REASON = 'could not create a primitive descriptor for the convolution forward propagation'


def test_the_probe_passes_where_no_instruction_set_limit_is_set():
  if any(os.environ.get(k) for k in cpu_info.ISA_LIMITS):
    pytest.skip('oneDNN is held to an instruction set here')
  assert precision.bfloat16_convolutions_fail() is None


def test_a_machine_without_bfloat16_convolutions_gets_one_error_naming_the_fix(monkeypatch):
  monkeypatch.setattr(precision, 'bfloat16_convolutions_fail', lambda: REASON)
  for name in cpu_info.ISA_LIMITS:
    monkeypatch.delenv(name, raising=False)
  with pytest.raises(errors.ConfigError) as raised:
    precision.check_policy('mixed_bfloat16')
  message = str(raised.value)
  assert "train.mixed_precision = 'mixed_bfloat16' cannot run here" in message
  assert 'Train in float32 (train.mixed_precision = None)' in message
  assert message.endswith(f'TensorFlow said: {REASON}') and 'ONEDNN' not in message
  # The limit that causes it is named.
  monkeypatch.setenv('ONEDNN_MAX_CPU_ISA', 'AVX2')
  with pytest.raises(errors.ConfigError, match='ONEDNN_MAX_CPU_ISA=AVX2 holds oneDNN to '
                                               'kernels without bfloat16: unset it'):
    precision.check_policy('mixed_bfloat16')
  # Other policies never need it.
  for policy in (None, 'mixed_float16'):
    precision.check_policy(policy)
