"""The graph rewrites a run's numbers must not depend on.

TensorFlow's graph optimizer (Grappler) rewrites every tf.function graph before it runs.
Its arithmetic optimizer rewrites arithmetic (it regroups sums and hoists common factors,
among other stages), and on the nested-tape graph of the Sobolev constraint on f− what it
makes of it differs from one process to the next: two processes training one Ω_S(f−) or
Fisher + Ω_S(f−) configuration with the same seeds on one CPU can hold different weights
in the last bits after the first step (with `train.deterministic_ops` and with oneDNN off
too), and a GAN's trajectory amplifies that into a different run. With the arithmetic
optimizer off, every process computes the same graph, so a run is a function of its
configuration, its seeds and its CPU, and a resumed run continues exactly where the killed
one stopped. The Fisher critic computes the same numbers either way; WGAN-GP and Sobolev
get the one sum order every process now computes (measurements:
docs/reliability.md#one-process-or-another).
"""
import tensorflow as tf

# The Grappler option this module turns off (tf.config.optimizer's name for it).
ARITHMETIC_OPTIMIZATION = 'arithmetic_optimization'


def fix_summation_order():
  """Turns Grappler's arithmetic optimizer off for this process's graphs from now on."""
  tf.config.optimizer.set_experimental_options({ARITHMETIC_OPTIMIZATION: False})


def summation_order_fixed() -> bool:
  """Whether this process's graphs are built with the arithmetic optimizer off."""
  return tf.config.optimizer.get_experimental_options().get(ARITHMETIC_OPTIMIZATION) is False
