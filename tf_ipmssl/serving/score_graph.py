"""The "none of these classes" scores (foreign_score.py) as TensorFlow ops, inside every
export's graph, and their thresholds fixed on a run's known images.

The ops are those every format holds (softmax, log-softmax, reductions), computed from the
one pass through Φ that gives the class logits, so that the SavedModel, ONNX and LiteRT
exports answer the same scores as the critic here.
"""
import numpy as np
import tensorflow as tf

from tf_ipmssl.data import pipelines
from tf_ipmssl.objectives import formulations
from tf_ipmssl.serving import foreign_score


def scores(fake_logit, class_logits, formulation):
  """float32 [N, S]: the scores foreign_score.names_for(formulation) names, in its order, of
  v·Φ(x) [N] and S(Φ(x)) [N, K]."""
  log_p = tf.nn.log_softmax(class_logits, axis=-1)
  p = tf.exp(log_p)
  columns = {foreign_score.SOFTMAX: 1.0 - tf.reduce_max(p, axis=-1),
             foreign_score.ENTROPY: -tf.reduce_sum(p * log_p, axis=-1)}
  if formulation is not None:
    outputs = formulations.critic_outputs(fake_logit, class_logits, formulation)
    columns[foreign_score.CRITIC] = -outputs.f
    if outputs.f_neg is not None:
      columns[foreign_score.FAKE] = outputs.f_neg
  return tf.stack([columns[name] for name in foreign_score.names_for(formulation)], axis=-1)


def outputs(critic, model_input, formulation):
  """(class logits [N, K], scores [N, S]), float32, of a model-ready batch: one pass through
  Φ, dropout off."""
  fake_logit, class_logits = critic(model_input, training=False)
  return class_logits, scores(fake_logit, class_logits, formulation)


def served(critic, model_input, scoring):
  """What an export's graph computes of a model-ready batch: (class logits [N, K], and
  {'scores': [N, S]} with `scoring` (fit's metadata entry), {} without)."""
  if scoring is None:
    return tf.cast(critic.classify(model_input, training=False), tf.float32), {}
  logits, scored = outputs(critic, model_input, scoring['formulation'])
  return logits, {'scores': scored}


def score_images(critic, images, formulation, batch_size=256):
  """float32 [N, S] scores of uint8 images [N, H, W, C] of the critic's input size."""
  fn = tf.function(lambda x: outputs(critic, x, formulation)[1], reduce_retracing=True)
  if not len(images):
    return np.zeros([0, len(foreign_score.names_for(formulation))], np.float32)
  return np.concatenate([fn(pipelines.to_model_input(images[i:i + batch_size])).numpy()
                         for i in range(0, len(images), batch_size)])


def fit(critic, formulation, data):
  """The metadata entry (foreign_score.describe) of the critic's scores, thresholds fixed on
  the known images of ssl_data.SSLData `data`: its validation split, or its labeled images
  where it has none."""
  fitted_on, images = 'validation', data.validation_images
  if not len(images):
    fitted_on, images = 'labeled', data.labeled_images
  return foreign_score.describe(formulation, score_images(critic, images, formulation),
                                fitted_on)


def foreign_test(critic, formulation, data, fitted):
  """How the critic's scores tell the test images of the dataset's other classes
  (ssl_data.SSLData `data`'s foreign_test_images, a class-subset run's) from its known test
  images, at the thresholds an export of it states (`fitted`: fit of the same critic and
  data): metrics.json's `foreign_test` less its step and checkpoint (run_dir/reporting.py;
  foreign_score.test_results). No RNG: the critic scores with dropout off."""
  known = score_images(critic, data.test_images, formulation)
  foreign = score_images(critic, data.foreign_test_images, formulation)
  return {'known_images': int(len(known)), 'foreign_images': int(len(foreign)),
          'default': fitted['default'], 'fitted_on': fitted['fitted_on'],
          'pass_share': fitted['pass_share'],
          'scores': foreign_score.test_results(fitted, known, foreign)}
