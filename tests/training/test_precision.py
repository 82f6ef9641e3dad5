"""The process's numerics (precision.py): the summation order every tf.function gets once it
is fixed, and the bfloat16 pre-flight check (the probe runs where bfloat16 convolutions do,
and a machine whose kernels cannot gets one ConfigError naming the fix)."""
import os

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2
from tensorflow.core.protobuf import rewriter_config_pb2
from tensorflow.python.eager import context

from tf_ipmssl import errors
from tf_ipmssl import process_state
from tf_ipmssl.run_dir import cpu_info
from tf_ipmssl.training import precision

REASON = 'could not create a primitive descriptor for the convolution forward propagation'
RewriterConfig = rewriter_config_pb2.RewriterConfig


def _function_rewrites():
  """The Grappler configuration a tf.function called now in this thread is optimized with."""
  serialized = context.context().function_call_options.config_proto_serialized
  return config_pb2.ConfigProto.FromString(serialized).graph_options.rewrite_options


def test_fixing_the_summation_order_turns_both_rewrites_off_for_new_functions():
  """Both rewrites that order a graph's sums by process: the arithmetic optimizer and the
  memory optimizer (AddN into accumulation in arrival order)."""
  with process_state.preserved():
    before = _function_rewrites()
    assert before.memory_optimization == RewriterConfig.DEFAULT_MEM_OPT
    assert not precision.summation_order_fixed()
    precision.fix_summation_order()
    rewrites = _function_rewrites()
    assert rewrites.memory_optimization == RewriterConfig.NO_MEM_OPT
    assert rewrites.arithmetic_optimization == RewriterConfig.OFF
    assert precision.summation_order_fixed()
    # Another Grappler option changed later keeps both off.
    tf.config.optimizer.set_experimental_options({'constant_folding': False})
    assert _function_rewrites().memory_optimization == RewriterConfig.NO_MEM_OPT
    assert precision.summation_order_fixed()
  # preserved() puts both back.
  assert _function_rewrites().memory_optimization == RewriterConfig.DEFAULT_MEM_OPT
  assert precision.memory_optimization() == RewriterConfig.DEFAULT_MEM_OPT
  assert not precision.summation_order_fixed()
  assert 'constant_folding' not in tf.config.optimizer.get_experimental_options()


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
