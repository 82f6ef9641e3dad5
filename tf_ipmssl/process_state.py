"""The process-wide TensorFlow, Keras and random state a Python API call leaves as it found it.

Training sets process-wide state as its configuration says: Keras's global dtype policy
(train.mixed_precision), the seeds (keras.utils.set_random_seed(train.seed): Python's,
NumPy's, TensorFlow's and Keras's global seeds), and Grappler's arithmetic and memory
optimizers off (training/precision.py, which reading a run does too). The programs run once
per process; a notebook calls the API many times, so `preserved()` puts back, when its block
ends, what the public APIs can read and set again:

- Keras's global dtype policy (keras.mixed_precision.global_policy);
- Grappler's experimental options (tf.config.optimizer.get_experimental_options; an option
  that was unset is unset again, not set to its default) and its memory optimizer's level
  (precision.memory_optimization);
- Python's `random` and NumPy's global random states.

What no public API can read is left as the block set it, and the callers say so in their
docstrings: TensorFlow's and Keras's global seeds (a training call leaves them at its
train.seed; tf.random.get_seed itself advances TensorFlow's sequence), and what TensorFlow
cannot undo (op determinism and thread counts of train.deterministic_ops). gin's
configuration is configurables.isolated()'s.
"""
import contextlib
import random

import keras
import numpy as np
import tensorflow as tf

from tf_ipmssl.training import precision


@contextlib.contextmanager
def preserved():
  """The block's changes to the state above undone when it ends, raising or not."""
  policy = keras.mixed_precision.global_policy()
  options = tf.config.optimizer.get_experimental_options()
  memory_optimization = precision.memory_optimization()
  python_random, numpy_random = random.getstate(), np.random.get_state()
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(policy)
    changed = tf.config.optimizer.get_experimental_options()
    # None unsets an option (Grappler's default again).
    tf.config.optimizer.set_experimental_options(
        {**{name: None for name in changed if name not in options}, **options})
    precision.set_memory_optimization(memory_optimization)
    random.setstate(python_random)
    np.random.set_state(numpy_random)
