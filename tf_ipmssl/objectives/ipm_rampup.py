"""A ramp-up of the IPM term's weight in the critic's loss (an option; not in the paper).

The critic minimises −w(t)·(E_P f − E_Q f) + constraints + λ_CE·CE, with t the critic
update (0, 1, …) and T = `ssl.ipm_rampup_updates`:

  w(t) = exp(−5 (1 − t/T)²)  for t < T,   1 afterwards

(the sigmoid-shaped ramp-up of Laine & Aila, "Temporal Ensembling for Semi-Supervised
Learning", 2017, used for the unlabeled term in many SSL methods). Early on the classifier
learns mostly from the labels, while the constraints keep the critic bounded; the unlabeled
(IPM) term then comes in gradually. The generator's loss is unchanged.
"""
import tensorflow as tf


def rampup_weight(update, rampup_updates):
  """w(t) above, float32; `update` is the 0-based critic update (a tensor or int).

  None when `rampup_updates` is None (no ramp-up: the IPM term keeps its weight 1). The
  steps, the progress line and bin/diagnose all take the weight from here.
  """
  if rampup_updates is None:
    return None
  t = tf.cast(update, tf.float32)
  fraction = tf.clip_by_value(t / float(rampup_updates), 0.0, 1.0)
  return tf.exp(-5.0 * tf.square(1.0 - fraction))
