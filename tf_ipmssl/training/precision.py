"""A run's numerics that are the process's, not its configuration's: the summation order of
its graphs, and whether this machine's kernels run its mixed-precision policy.

The summation order. TensorFlow's graph optimizer (Grappler) rewrites every tf.function
graph before it runs, and two of its rewrites make a graph's sums depend on the process:

- Its arithmetic optimizer rewrites arithmetic (it regroups sums and hoists common factors,
  among other stages), and on the nested-tape graph of the Sobolev constraint on f− what it
  makes of it differs from one process to the next: two processes training one Ω_S(f−) or
  Fisher + Ω_S(f−) configuration with the same seeds on one CPU can hold different weights
  in the last bits after the first step (with `train.deterministic_ops` and with oneDNN off
  too).
- Its memory optimizer turns an AddN of more than two tensors (the sum of a weight's
  gradient contributions) into a temporary variable that each input is added to as it
  arrives, when its static memory model (against the RAM free at that moment) puts the inputs
  at the graph's peak. The order of those additions is the order the executor finishes the
  inputs in, and that changes within one process: the executor runs a kernel on its thread
  pool until about 90 runs have brought its cost estimate under a threshold, then inline,
  so two processes of one run part at the step where one of them first adds in another
  order.

With both off (`fix_summation_order`), every process computes the same graph with its sums in
the graph's order, so a run is a function of its configuration, its seeds and its CPU, and a
resumed run continues exactly where the killed one stopped. The Fisher critic computes the
same numbers either way; WGAN-GP and Sobolev get the one sum order every process now
computes (measurements: docs/reliability.md#one-process-or-another).

The mixed-precision policy. A CPU whose kernels have no bfloat16 convolution (oneDNN held to
AVX2 by ONEDNN_MAX_CPU_ISA on an AVX-512 CPU, whose TensorFlow still routes bfloat16
convolutions to oneDNN) fails deep inside the first step with "could not create a primitive
descriptor". `check_policy` tries one small bfloat16 convolution first and turns that into a
ConfigError naming the fix.
"""
import functools
from typing import Optional

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2
from tensorflow.core.protobuf import rewriter_config_pb2
from tensorflow.python.eager import context

from tf_ipmssl import errors
from tf_ipmssl.run_dir import cpu_info

# The Grappler option fix_summation_order turns off (tf.config.optimizer's name for it).
ARITHMETIC_OPTIMIZATION = 'arithmetic_optimization'
# The memory optimizer's level it sets (RewriterConfig.memory_optimization), and Grappler's.
NO_MEMORY_OPTIMIZATION = rewriter_config_pb2.RewriterConfig.NO_MEM_OPT
DEFAULT_MEMORY_OPTIMIZATION = rewriter_config_pb2.RewriterConfig.DEFAULT_MEM_OPT


def fix_summation_order():
  """Turns Grappler's arithmetic optimizer and memory optimizer off for this process's graphs
  from now on (for a tf.function, from its first call)."""
  tf.config.optimizer.set_experimental_options({ARITHMETIC_OPTIMIZATION: False})
  set_memory_optimization(NO_MEMORY_OPTIMIZATION)


def summation_order_fixed() -> bool:
  """Whether this process's graphs are built with both rewrites off."""
  return (tf.config.optimizer.get_experimental_options().get(ARITHMETIC_OPTIMIZATION) is False
          and memory_optimization() == NO_MEMORY_OPTIMIZATION)


def memory_optimization() -> int:
  """The memory optimizer's level (a RewriterConfig.MemOptType) this process's new graphs
  get."""
  base = context.context()._config  # pylint: disable=protected-access
  return (base.graph_options.rewrite_options.memory_optimization if base is not None
          else DEFAULT_MEMORY_OPTIMIZATION)


def set_memory_optimization(level: int) -> None:
  """Sets the memory optimizer's level for the graphs this process optimizes from now on.

  tf.config.optimizer has no switch for this optimizer, so the level goes into the eager
  context's base ConfigProto, from which TensorFlow builds the Grappler configuration of every
  tf.function at its first call (this thread's cached copy of it is dropped; another thread
  keeps its copy until it changes a tf.config.optimizer option itself).
  """
  ctx = context.context()
  config = config_pb2.ConfigProto()
  if ctx._config is not None:  # pylint: disable=protected-access
    config.CopyFrom(ctx._config)  # pylint: disable=protected-access
  config.graph_options.rewrite_options.memory_optimization = level
  ctx._config = config  # pylint: disable=protected-access
  # Rebuilt from the context's config at the next tf.function call of this thread.
  ctx.function_call_options = None


@functools.lru_cache(maxsize=None)
def bfloat16_convolutions_fail() -> Optional[str]:
  """Why a bfloat16 convolution (forward and transposed) fails here, None where both run."""
  images = tf.ones([1, 4, 4, 2], tf.bfloat16)
  kernel = tf.ones([3, 3, 2, 2], tf.bfloat16)
  try:
    tf.nn.conv2d(images, kernel, 1, 'SAME')
    tf.nn.conv2d_transpose(images, kernel, [1, 8, 8, 2], 2, 'SAME')
  except tf.errors.OpError as error:
    text = error.message.strip().splitlines()[0]
    return text.split('message: ', 1)[-1][:300]  # oneDNN's own words, without the op's path.
  return None


def check_policy(policy: Optional[str]) -> None:
  """A ConfigError where `policy` (train.mixed_precision) is 'mixed_bfloat16' and this
  machine cannot run bfloat16 convolutions."""
  if policy != 'mixed_bfloat16':
    return
  reason = bfloat16_convolutions_fail()
  if reason is None:
    return
  limit = cpu_info.isa_limit()
  hint = (f' ({limit[0]}={limit[1]} holds oneDNN to kernels without bfloat16: unset it)'
          if limit else '')
  raise errors.ConfigError(
      "train.mixed_precision = 'mixed_bfloat16' cannot run here: this machine's kernels have "
      f'no bfloat16 convolution{hint}. Train in float32 (train.mixed_precision = None). '
      f'TensorFlow said: {reason}')
