"""SavedModel export of the classifier Φ + S (not the GAN), for inference.

The serving function takes uint8 images [N, H, W, C] in the dataset's native size (28x28x1
for Fashion-MNIST, 32x32x3 for CIFAR-10/SVHN) or, where the run's images were resized (an
image folder's, or a dataset's at another `build_ssl_data.image_size` than its own), of any
one size, brought to the model's size in the graph by the rule it was trained with
(image_rules.fit_images); it applies the training-time input transform (scale to [-1, 1],
pad 28x28 to 32x32) and returns class probabilities, predicted labels and their class names;
a second signature, `class_names`, answers every class name. A served export needs no code
of this library.

What the signatures answer (a served format: its keys stay as they are):

  SIGNATURE_KEY ('serving_default'), on `images` uint8 [N, H, W, C]:
    'probabilities'  float32 [N, K], the softmax of the classifier's logits
    'labels'         int32 [N], each image's predicted label (the argmax)
    'class_names'    string [N], each image's predicted class name (not every class's: the
                     key says class names, one per image)
    'scores'         float32 [N, S], the "none of these classes" scores (foreign_score.py),
                     their names and thresholds in the metadata's 'foreign_score'
  CLASS_NAMES_KEY ('class_names'), without inputs:
    'class_names'    string [K], every class's name, by label

History: a SavedModel export written before the metadata file (metadata.py) existed has
none; one written before the scores lacks 'scores' (and its metadata 'foreign_score'); one written before the CLASS_NAMES_KEY signature existed lacks it, and its classes are
then named '0', '1', ... (prediction.Predictor reads both from the signatures alone).

An export never deletes what it did not write, and a process killed at any instant of it
leaves directories that the next export recognizes as its own: the export is written into
`<dir>.tmp` (marked as partial before anything else goes in), an earlier export is marked
the same way before its files are removed, and the temporary one is then renamed into
place. A directory is an export's own when it is empty, carries the partial-export marker,
or holds a complete export and nothing besides the files that export wrote. The ONNX and
LiteRT exports (onnx_export.py, litert_export.py) are written by the same rules
(write_export).
"""
import json
import os

import keras
import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import fault_injection
from tf_ipmssl.data import image_rules
from tf_ipmssl.data import pipelines
from tf_ipmssl.serving import formats
from tf_ipmssl.serving import metadata as metadata_lib
from tf_ipmssl.serving import model_card
from tf_ipmssl.serving import score_graph

SIGNATURE_KEY = 'serving_default'
CLASS_NAMES_KEY = 'class_names'
METADATA_FILE = metadata_lib.METADATA_FILE


def _serving_function(critic, image_shape, class_names, resize, scoring=None):
  """The serving computation on uint8 images [N, H, W, C] (SIGNATURE_KEY's outputs: the
  module doc): checked shape, empty batches; with `resize`, images of any one size brought
  to image_shape by image_rules.fit_images. `class_names`: every class's, by label;
  `scoring`: the metadata entry of the scores (score_graph.fit), None for none."""
  expected = ', '.join(map(str, image_shape))
  every_class_name = tf.constant(class_names, tf.string)
  if resize:
    expected = f'H, W, {image_shape[-1]}'
  checked = tf.constant(image_shape[-1:] if resize else image_shape, tf.int32)

  def serve(images):
    shape = tf.shape(images)
    # Asserts in the graph: saved_model_cli, a TF1 Session and TF Serving feed the
    # placeholder without checking anything beyond its rank. The computation waits for them:
    # otherwise a shape check inside it (the resize's, a convolution's) may fail first and
    # its message would stand in for theirs, depending on which op the executor ran first.
    checks = [tf.debugging.assert_rank(
        images, 4, message=f'the classifier takes uint8 images of shape [N, {expected}]')]
    with tf.control_dependencies([c for c in checks if c is not None]):
      checks.append(tf.debugging.assert_equal(
          shape[4 - len(checked):], checked,
          message=f'the classifier takes uint8 images of shape [N, {expected}]; got another '
          + ('channel count' if resize else 'height, width or channel count')))
    with tf.control_dependencies([c for c in checks if c is not None]):
      images = tf.identity(images)
    count = shape[0]
    # An empty batch runs the network on one blank image and answers its first 0 rows:
    # some convolution kernels reject an empty input.
    batch = tf.cond(count > 0, lambda: images,
                    lambda: tf.zeros([1, *image_shape], tf.uint8))
    if resize:
      batch = image_rules.fit_images(batch, image_shape[0])
    logits, answers = score_graph.served(critic, pipelines.to_model_input(batch), scoring)
    logits, answers = logits[:count], {k: v[:count] for k, v in answers.items()}
    labels = tf.argmax(logits, axis=-1, output_type=tf.int32)
    # 'class_names': the predicted class's name of each image (the served key).
    return dict(answers, probabilities=tf.nn.softmax(logits, axis=-1), labels=labels,
                class_names=tf.gather(every_class_name, labels))
  return serve


# Written first into a temporary export, so that a leftover one is known to be ours.
PARTIAL_MARKER = '.tf_ipmssl_partial_export'
# What marks a run directory (bin/train's model dir) and the checkpoint folders inside it.
_RUN_MARKERS = ('config.gin', 'metrics.json', 'train.lock')
_CHECKPOINT_FOLDERS = ('checkpoints', 'best')


def _is_run_dir(path):
  return any(tf.io.gfile.exists(os.path.join(path, m)) for m in _RUN_MARKERS)


# What an export holds besides its metadata, where the metadata does not list it (older
# ones do not: metadata.py).
_EXPORT_ENTRIES = ('assets', 'fingerprint.pb', 'saved_model.pb', 'variables')


def _foreign_entries(path):
  """The entries of directory `path` that an export did not write (the module doc): [] for
  an empty directory, a partial export of ours or a complete export alone; None when `path`
  holds files but no export at all."""
  entries = tf.io.gfile.listdir(path)
  names = [e.rstrip('/') for e in entries]
  if not names or PARTIAL_MARKER in names:
    return []
  if not export_is_complete(path):
    return None
  with tf.io.gfile.GFile(os.path.join(path, METADATA_FILE)) as f:
    written = json.load(f).get('entries', _EXPORT_ENTRIES)
  return sorted(set(names) - set(written) - {METADATA_FILE})


def check_export_dir(export_dir):
  """A UserError unless writing the export to export_dir loses nothing the user owns.

  Refused: a run directory itself, anything inside a run's checkpoints/ or best/, a file, a
  non-empty directory that is not a previous classifier export, and an earlier export with
  other files beside it (only what an export wrote is ever replaced).
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
  foreign = _foreign_entries(path)
  if foreign is None:
    raise errors.UserError(
        f'refusing to replace {export_dir}: it holds files that are not a tf_ipmssl '
        'classifier export; choose a new --export_dir (or move those files away)')
  if foreign:
    raise errors.UserError(
        f'refusing to replace {export_dir}: besides an earlier export it holds '
        f'{", ".join(foreign)}, which an export does not write; move '
        f'{"it" if len(foreign) == 1 else "them"} away or choose a new --export_dir')


def _mark_partial(directory):
  with tf.io.gfile.GFile(os.path.join(directory, PARTIAL_MARKER), 'w') as f:
    f.write('a tf_ipmssl export in progress (or being replaced); removed when it completes\n')


def _remove_export(directory):
  """Removes an export of ours (_foreign_entries == []) so that a kill at any instant leaves
  it marked as partial or empty: the marker goes in first and out last."""
  if tf.io.gfile.listdir(directory):
    _mark_partial(directory)
  for entry in tf.io.gfile.listdir(directory):
    entry = os.path.join(directory, entry.rstrip('/'))
    if os.path.basename(entry) == PARTIAL_MARKER:
      continue
    if tf.io.gfile.isdir(entry):
      tf.io.gfile.rmtree(entry)
    else:
      tf.io.gfile.remove(entry)
  if tf.io.gfile.exists(os.path.join(directory, PARTIAL_MARKER)):
    tf.io.gfile.remove(os.path.join(directory, PARTIAL_MARKER))
  tf.io.gfile.rmtree(directory)  # Empty by now.


def _fresh_temporary_dir(export_dir):
  """export_dir + '.tmp', empty but for the partial-export marker: a leftover of an export
  (the module doc) is removed; anything else there is refused."""
  tmp_dir = export_dir.rstrip('/') + '.tmp'
  if tf.io.gfile.exists(tmp_dir):
    if not tf.io.gfile.isdir(tmp_dir) or _foreign_entries(tmp_dir) != []:
      raise errors.UserError(f'refusing to use {tmp_dir} for a temporary export: it exists '
                             'and was not written by an export; move it away')
    _remove_export(tmp_dir)
  tf.io.gfile.makedirs(tmp_dir)
  fault_injection.reach('export_tmp_created')
  _mark_partial(tmp_dir)
  return tmp_dir


def export_classifier(critic, image_shape, export_dir, num_classes, dataset='',
                      class_names=None, resize=None, scoring=None, summary=None):
  """Writes the SavedModel to export_dir: into a temporary directory beside it, then renamed
  into place. Only a previous classifier export is replaced (check_export_dir).

  Its signature SIGNATURE_KEY answers probabilities, labels and each image's predicted
  class name (under the key 'class_names': the module doc); the signature CLASS_NAMES_KEY,
  without inputs, answers every class's name. `class_names`: every class's name, by label
  (default '0', '1', ...). `resize`: None (images in image_shape) or the rule
  (image_rules.resize_rule(image_shape[0])) by which images of any size are brought to
  image_shape in the graph. `scoring`: the "none of these classes" scores' metadata entry
  (score_graph.fit, from the critic and the run's known images), answered as 'scores' and
  stated in the metadata; None: an export without them. `summary`: the run's, for the model
  card (model_card.py).

  Written with keras.export.ExportArchive, which saves the Keras variables as TF variables
  the graph refers to: the export then serves in `saved_model_cli run`, a TF1 Session
  (TF Serving's path) and tf.saved_model.load alike.
  """
  check_export_dir(export_dir)
  image_shape = tuple(int(d) for d in image_shape)
  class_names = [str(name) for name in class_names or range(num_classes)]
  if len(class_names) != num_classes:
    raise ValueError(f'{len(class_names)} class names for {num_classes} classes')
  archive = keras.export.ExportArchive()
  archive.track(critic)
  input_shape = [None, None, None, image_shape[-1]] if resize else [None, *image_shape]
  archive.add_endpoint(
      name=SIGNATURE_KEY,
      fn=_serving_function(critic, image_shape, class_names, resize, scoring),
      input_signature=[tf.TensorSpec(input_shape, tf.uint8, name='images')])
  archive.add_endpoint(
      name=CLASS_NAMES_KEY,
      fn=lambda: {'class_names': tf.constant(class_names, tf.string)}, input_signature=[])
  return write_export(
      export_dir, lambda tmp_dir: archive.write_out(tmp_dir, verbose=False),
      metadata_lib.describe(formats.SAVED_MODEL, 'saved_model.pb', image_shape, num_classes,
                            dataset, class_names, resize, scoring), summary)


def write_export(export_dir, write, metadata, summary=None):
  """Writes an export by the module doc's rules: `write(tmp_dir)` puts the model's files into
  a fresh temporary directory, the model card (model_card.py, from `metadata` and the run's
  `summary`) and `metadata` (a dict) go beside them, the metadata as METADATA_FILE with the
  list of the files written, and the directory is then renamed into place, replacing only an
  earlier export (check_export_dir)."""
  check_export_dir(export_dir)
  tmp_dir = _fresh_temporary_dir(export_dir)
  write(tmp_dir)
  with tf.io.gfile.GFile(os.path.join(tmp_dir, model_card.CARD_FILE), 'w') as f:
    f.write(model_card.text(metadata, summary))
  entries = sorted(e.rstrip('/') for e in tf.io.gfile.listdir(tmp_dir) if e != PARTIAL_MARKER)
  with tf.io.gfile.GFile(os.path.join(tmp_dir, METADATA_FILE), 'w') as f:
    json.dump(dict(metadata, entries=entries), f, indent=2)
  tf.io.gfile.remove(os.path.join(tmp_dir, PARTIAL_MARKER))
  fault_injection.reach('export_written')
  if tf.io.gfile.exists(export_dir):  # An earlier export (or an empty directory).
    _remove_export(export_dir)
  fault_injection.reach('export_old_removed')
  tf.io.gfile.rename(tmp_dir, export_dir)
  fault_injection.reach('export_renamed')
  return export_dir


def export_is_complete(export_dir):
  """True when export_dir holds a finished export of any format (the rename is its last act),
  not one being replaced (marked partial)."""
  return (any(tf.io.gfile.exists(os.path.join(export_dir, m)) for m in formats.MODEL_FILES)
          and tf.io.gfile.exists(os.path.join(export_dir, METADATA_FILE))
          and not tf.io.gfile.exists(os.path.join(export_dir, PARTIAL_MARKER)))
