"""SavedModel export of the classifier Φ + S (not the GAN), for inference.

The serving function takes uint8 images [N, H, W, C] in the dataset's native size (28x28x1
for Fashion-MNIST, 32x32x3 for CIFAR-10/SVHN), applies the training-time input transform
(scale to [-1, 1], pad to 32x32) and returns class probabilities and predicted labels.
"""
import json
import os

import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.data import pipelines

SIGNATURE_KEY = 'serving_default'
METADATA_FILE = 'tf_ipmssl_classifier.json'


class ClassifierModule(tf.Module):
  """tf.Module holding the critic's trunk and class head with an explicit serving signature."""

  def __init__(self, critic, image_shape):
    super().__init__(name='classifier')
    self.critic = critic
    self.image_shape = tuple(int(d) for d in image_shape)
    spec = tf.TensorSpec([None, *self.image_shape], tf.uint8, name='images')
    self.serve = tf.function(self._serve, input_signature=[spec])

  def _serve(self, images):
    logits = tf.cast(self.critic.classify(pipelines.to_model_input(images), training=False),
                     tf.float32)
    return {'probabilities': tf.nn.softmax(logits, axis=-1),
            'labels': tf.argmax(logits, axis=-1, output_type=tf.int32)}


def export_classifier(critic, image_shape, export_dir, num_classes, dataset=''):
  """Writes the SavedModel to export_dir (replacing an older export atomically)."""
  module = ClassifierModule(critic, image_shape)
  tmp_dir = export_dir.rstrip('/') + '.tmp'
  if tf.io.gfile.exists(tmp_dir):
    tf.io.gfile.rmtree(tmp_dir)
  tf.saved_model.save(module, tmp_dir, signatures={SIGNATURE_KEY: module.serve})
  with tf.io.gfile.GFile(os.path.join(tmp_dir, METADATA_FILE), 'w') as f:
    json.dump({'image_shape': list(module.image_shape), 'num_classes': int(num_classes),
               'dataset': dataset, 'input_dtype': 'uint8'}, f, indent=2)
  if tf.io.gfile.exists(export_dir):
    tf.io.gfile.rmtree(export_dir)
  tf.io.gfile.rename(tmp_dir, export_dir)
  return export_dir


class LoadedClassifier:
  """An exported classifier reloaded with tf.saved_model.load, with input checks."""

  def __init__(self, export_dir):
    metadata_path = os.path.join(export_dir, METADATA_FILE)
    if not tf.io.gfile.exists(metadata_path):
      raise errors.UserError(
          f'{export_dir} is not a tf_ipmssl classifier export (no {METADATA_FILE}); export one '
          'with `bin/export --model_dir=RUN_DIR`')
    with tf.io.gfile.GFile(metadata_path) as f:
      self.metadata = json.load(f)
    self.image_shape = tuple(self.metadata['image_shape'])
    self._module = tf.saved_model.load(export_dir)

  def __call__(self, images):
    images = np.asarray(images)
    if images.dtype != np.uint8:
      raise errors.UserError(
          f'the classifier takes uint8 images (0..255), got dtype {images.dtype}; convert with '
          'np.asarray(images, np.uint8) before scaling')
    if images.ndim != 4 or tuple(images.shape[1:]) != self.image_shape:
      raise errors.UserError(
          f'the classifier takes images of shape [N, {", ".join(map(str, self.image_shape))}], '
          f'got {list(images.shape)}')
    out = self._module.serve(tf.constant(images))
    return {k: v.numpy() for k, v in out.items()}
