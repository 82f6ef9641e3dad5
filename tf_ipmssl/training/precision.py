"""A run's numerics that are the process's, not its configuration's: the summation order of
its graphs, and whether this machine's kernels run its mixed-precision policy.

The summation order. TensorFlow's graph optimizer (Grappler) rewrites every tf.function
graph before it runs. Its arithmetic optimizer rewrites arithmetic (it regroups sums and
hoists common factors, among other stages), and on the nested-tape graph of the Sobolev
constraint on f− what it makes of it differs from one process to the next: two processes
training one Ω_S(f−) or Fisher + Ω_S(f−) configuration with the same seeds on one CPU can
hold different weights in the last bits after the first step (with `train.deterministic_ops`
and with oneDNN off too), and a GAN's trajectory amplifies that into a different run. With
the arithmetic optimizer off (`fix_summation_order`), every process computes the same graph,
so a run is a function of its configuration, its seeds and its CPU, and a resumed run
continues exactly where the killed one stopped. The Fisher critic computes the same numbers
either way; WGAN-GP and Sobolev get the one sum order every process now computes
(measurements: docs/reliability.md#one-process-or-another).

The mixed-precision policy. A CPU whose kernels have no bfloat16 convolution (oneDNN held to
AVX2 by ONEDNN_MAX_CPU_ISA on an AVX-512 CPU, whose TensorFlow still routes bfloat16
convolutions to oneDNN) fails deep inside the first step with "could not create a primitive
descriptor". `check_policy` tries one small bfloat16 convolution first and turns that into a
ConfigError naming the fix.
"""
import functools
from typing import Optional

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.run_dir import cpu_info

# The Grappler option fix_summation_order turns off (tf.config.optimizer's name for it).
ARITHMETIC_OPTIMIZATION = 'arithmetic_optimization'


def fix_summation_order():
  """Turns Grappler's arithmetic optimizer off for this process's graphs from now on."""
  tf.config.optimizer.set_experimental_options({ARITHMETIC_OPTIMIZATION: False})


def summation_order_fixed() -> bool:
  """Whether this process's graphs are built with the arithmetic optimizer off."""
  return tf.config.optimizer.get_experimental_options().get(ARITHMETIC_OPTIMIZATION) is False


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
