"""SavedModel export of the classifier Φ + S (not the GAN), for inference.

The serving function takes uint8 images [N, H, W, C] in the dataset's native size (28x28x1
for Fashion-MNIST, 32x32x3 for CIFAR-10/SVHN), applies the training-time input transform
(scale to [-1, 1], pad to 32x32) and returns class probabilities and predicted labels.
"""
import json
import os

import keras
import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import fault_injection
from tf_ipmssl.data import pipelines

SIGNATURE_KEY = 'serving_default'
METADATA_FILE = 'tf_ipmssl_classifier.json'


def _serving_function(critic, image_shape):
  """The serving computation on uint8 images [N, H, W, C]: checked shape, empty batches."""
  expected = ', '.join(map(str, image_shape))

  def serve(images):
    shape = tf.shape(images)
    # Asserts in the graph: saved_model_cli, a TF1 Session and TF Serving feed the
    # placeholder without checking anything beyond its rank.
    tf.debugging.assert_rank(
        images, 4, message=f'the classifier takes uint8 images of shape [N, {expected}]')
    tf.debugging.assert_equal(
        shape[1:], tf.constant(image_shape, tf.int32),
        message=f'the classifier takes uint8 images of shape [N, {expected}]; got another '
        'height, width or channel count')
    count = shape[0]
    # An empty batch runs the network on one blank image and answers its first 0 rows:
    # some convolution kernels reject an empty input.
    batch = tf.cond(count > 0, lambda: images,
                    lambda: tf.zeros([1, *image_shape], tf.uint8))
    logits = tf.cast(critic.classify(pipelines.to_model_input(batch), training=False),
                     tf.float32)[:count]
    return {'probabilities': tf.nn.softmax(logits, axis=-1),
            'labels': tf.argmax(logits, axis=-1, output_type=tf.int32)}
  return serve


# Written first into a temporary export, so that a leftover one is known to be ours.
PARTIAL_MARKER = '.tf_ipmssl_partial_export'
# What marks a run directory (bin/train's model dir) and the checkpoint folders inside it.
_RUN_MARKERS = ('config.gin', 'metrics.json', 'train.lock')
_CHECKPOINT_FOLDERS = ('checkpoints', 'best')


def _is_run_dir(path):
  return any(tf.io.gfile.exists(os.path.join(path, m)) for m in _RUN_MARKERS)


def check_export_dir(export_dir):
  """A UserError unless writing the export to export_dir loses nothing the user owns.

  Refused: a run directory itself, anything inside a run's checkpoints/ or best/, a file, and
  a non-empty directory that is not a previous classifier export (only an export is ever
  replaced).
  """
  path = os.path.abspath(export_dir)
  if _is_run_dir(path):
    raise errors.UserError(f'refusing to export into {export_dir}: it is a run directory '
                           '(checkpoints, config, metrics); choose another --export_dir')
  parent = path
  while os.path.dirname(parent) != parent:
    parent, name = os.path.dirname(parent), os.path.basename(parent)
    if name in _CHECKPOINT_FOLDERS and _is_run_dir(parent):
      raise errors.UserError(f"refusing to export into {export_dir}: it is inside the run's "
                             f'{name}/ folder; choose another --export_dir')
  if not tf.io.gfile.exists(path):
    return
  if not tf.io.gfile.isdir(path):
    raise errors.UserError(f'refusing to export to {export_dir}: it is a file; choose '
                           'another --export_dir')
  if tf.io.gfile.listdir(path) and not export_is_complete(path):
    raise errors.UserError(
        f'refusing to replace {export_dir}: it holds files that are not a tf_ipmssl '
        'classifier export; choose a new --export_dir (or move those files away)')


def _fresh_temporary_dir(export_dir):
  """export_dir + '.tmp', empty: a leftover partial export of ours is removed; anything else
  there is refused."""
  tmp_dir = export_dir.rstrip('/') + '.tmp'
  if tf.io.gfile.exists(tmp_dir):
    if not tf.io.gfile.exists(os.path.join(tmp_dir, PARTIAL_MARKER)):
      raise errors.UserError(f'refusing to use {tmp_dir} for a temporary export: it exists '
                             'and was not written by an export; move it away')
    tf.io.gfile.rmtree(tmp_dir)
  tf.io.gfile.makedirs(tmp_dir)
  fault_injection.reach('export_tmp_created')
  with tf.io.gfile.GFile(os.path.join(tmp_dir, PARTIAL_MARKER), 'w') as f:
    f.write('a tf_ipmssl export in progress; removed when it completes\n')
  return tmp_dir


def export_classifier(critic, image_shape, export_dir, num_classes, dataset=''):
  """Writes the SavedModel to export_dir: into a temporary directory beside it, then renamed
  into place. Only a previous classifier export is replaced (check_export_dir).

  Written with keras.export.ExportArchive, which saves the Keras variables as TF variables
  the graph refers to: the export then serves in `saved_model_cli run`, a TF1 Session
  (TF Serving's path) and tf.saved_model.load alike.
  """
  check_export_dir(export_dir)
  image_shape = tuple(int(d) for d in image_shape)
  archive = keras.export.ExportArchive()
  archive.track(critic)
  archive.add_endpoint(
      name=SIGNATURE_KEY, fn=_serving_function(critic, image_shape),
      input_signature=[tf.TensorSpec([None, *image_shape], tf.uint8, name='images')])
  tmp_dir = _fresh_temporary_dir(export_dir)
  archive.write_out(tmp_dir, verbose=False)
  with tf.io.gfile.GFile(os.path.join(tmp_dir, METADATA_FILE), 'w') as f:
    json.dump({'image_shape': list(image_shape), 'num_classes': int(num_classes),
               'dataset': dataset, 'input_dtype': 'uint8'}, f, indent=2)
  tf.io.gfile.remove(os.path.join(tmp_dir, PARTIAL_MARKER))
  fault_injection.reach('export_written')
  if tf.io.gfile.exists(export_dir):  # An earlier export (or an empty directory).
    tf.io.gfile.rmtree(export_dir)
  fault_injection.reach('export_old_removed')
  tf.io.gfile.rename(tmp_dir, export_dir)
  fault_injection.reach('export_renamed')
  return export_dir


def export_is_complete(export_dir):
  """True when export_dir holds a finished export (the rename is its last act)."""
  return (tf.io.gfile.exists(os.path.join(export_dir, 'saved_model.pb'))
          and tf.io.gfile.exists(os.path.join(export_dir, METADATA_FILE)))


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
    out = self._module.signatures[SIGNATURE_KEY](images=tf.constant(images))
    return {k: v.numpy() for k, v in out.items()}
