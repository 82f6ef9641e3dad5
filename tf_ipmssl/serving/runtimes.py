"""An exported classifier of any format, served by its own runtime.

`open_classifier(export_dir)` recognizes the format by the model file and metadata in the
directory (formats.py) and serves it; given an ONNX or LiteRT model file itself (model.onnx,
model.tflite), it reads the description the file carries (ONNX's metadata_props, LiteRT's
embedded metadata: litert_metadata.py), so that the file alone serves: a SavedModel with TensorFlow (imported only then), an
ONNX model with onnxruntime, a LiteRT model with ai-edge-litert's interpreter. ONNX and LiteRT
exports are served without importing TensorFlow, so that a machine or process that has only
the runtime can classify. Every format answers the same call on uint8 images [N, H, W, C]:
`probabilities` [N, K] float32 and `labels` [N] int32 (and `scores` [N, S] float32, the "none
of these classes" scores, where the export has them: foreign_score.py), with the dtype and shape checked here in
one line (the ONNX and LiteRT graphs hold no asserts) and an empty batch answered without
running the model.
"""
import json
import os

import numpy as np

from tf_ipmssl import errors
from tf_ipmssl.serving import foreign_score
from tf_ipmssl.serving import formats
from tf_ipmssl.serving import metadata as metadata_lib

SIGNATURE_KEY = 'serving_default'


def _saved_model(export_dir, keys):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  (only for this format)
  serve = tf.saved_model.load(export_dir).signatures[SIGNATURE_KEY]

  def run(images):
    out = serve(images=tf.constant(images))
    return {key: out[key].numpy() for key in keys}
  return run


def _onnx_session(model_path):
  import onnxruntime  # pylint: disable=g-import-not-at-top  (the `onnx` extra)
  return onnxruntime.InferenceSession(model_path, providers=['CPUExecutionProvider'])


def _onnx(session, keys):
  def run(images):
    return dict(zip(keys, session.run(list(keys), {'images': images})))
  return run


def _litert(export_dir, model_file, keys):
  from ai_edge_litert import interpreter  # pylint: disable=g-import-not-at-top  (`litert`)
  model = interpreter.Interpreter(model_path=os.path.join(export_dir, model_file),
                                  num_threads=os.cpu_count())
  runner = model.get_signature_runner(SIGNATURE_KEY)

  def run(images):
    out = runner(images=images)  # The runner resizes its input to each batch's shape.
    return {key: out[key] for key in keys}
  return run


def _format_of_file(model_path):
  """The format of a model file, by its suffix (a .tflite file's own metadata tells int8)."""
  if model_path.endswith('.onnx'):
    return formats.ONNX
  if model_path.endswith('.tflite'):
    return formats.LITERT
  raise errors.UserError(
      f'{model_path} is not a model file this library serves (a .onnx or .tflite file, or an '
      'export directory)')


def _embedded_metadata(model_path, session=None):
  """The description inside an ONNX model file (its onnxruntime `session`'s properties) or
  a LiteRT one (session None), or None."""
  if session is not None:
    properties = session.get_modelmeta().custom_metadata_map
    if 'class_names' not in properties:
      return None
    return {key: json.loads(value) for key, value in properties.items()}
  from tf_ipmssl.serving import litert_metadata  # pylint: disable=g-import-not-at-top
  return litert_metadata.read(model_path)


class Classifier:
  """An export reloaded in its runtime (the module doc).

  Attributes:
    export_dir: its directory.
    format: its format's name (formats.FORMATS).
    metadata: its metadata file (metadata.py).
    image_shape: the model's (H, W, C).
    input_shape: the (H, W, C) it takes; H and W None where it resizes images of any size.
    class_names: every class's name, by label.
    score_names: the names of its "none of these classes" scores (foreign_score.py), the
      columns of `scores`; () for an export written before them.
  """

  def __init__(self, export_dir):
    export_dir = os.fspath(export_dir)
    model_path = session = None
    if os.path.isfile(export_dir):  # A model file: it describes itself.
      model_path, export_dir = export_dir, os.path.dirname(export_dir) or '.'
      self.format = _format_of_file(model_path)
      formats.check_available([self.format], serving=True)
      if self.format == formats.ONNX:  # Its session answers its metadata, and serves.
        session = _onnx_session(model_path)
      self.metadata = _embedded_metadata(model_path, session)
      if (self.metadata or {}).get('format') in formats.FORMATS:  # litert_int8 says so.
        self.format = self.metadata['format']
    else:
      self.format = formats.of_directory(export_dir)
      if not self.format:
        raise errors.UserError(
            f'{export_dir} holds no exported classifier (none of '
            f'{", ".join(formats.MODEL_FILES)}); pass the export directory of bin/train or '
            'bin/export')
      self.metadata = metadata_lib.read(export_dir)
      formats.check_available([self.format], serving=True)
    self.export_dir = export_dir
    if self.metadata is None:
      raise errors.UserError(
          f'{model_path or export_dir} is not a tf_ipmssl classifier export (no '
          f'{metadata_lib.METADATA_FILE}); export one with `bin/export --model_dir=RUN_DIR`')
    self.image_shape = tuple(self.metadata['image_shape'])
    self.resize = self.metadata.get('resize')
    self.input_shape = ((None, None, self.image_shape[-1]) if self.resize
                        else self.image_shape)
    self.class_names = tuple(self.metadata.get('class_names')
                             or (str(k) for k in range(self.metadata['num_classes'])))
    scoring = self.metadata.get(foreign_score.METADATA_KEY)
    self.score_names = tuple(scoring['names']) if scoring else ()
    keys = ('probabilities', 'labels') + (('scores',) if scoring else ())
    model_file = (os.path.basename(model_path) if model_path
                  else formats.FORMATS[self.format].model_file)
    if self.format == formats.SAVED_MODEL:
      self._run = _saved_model(export_dir, keys)
    elif self.format == formats.ONNX:
      self._run = _onnx(session or _onnx_session(os.path.join(export_dir, model_file)), keys)
    else:
      self._run = _litert(export_dir, model_file, keys)

  def check(self, images):
    """images as a uint8 array, or a UserError naming the dtype or shape the model takes."""
    return metadata_lib.checked_images(images, self.image_shape[-1:] if self.resize
                                       else self.image_shape)

  def __call__(self, images):
    """{'probabilities': float32 [N, K], 'labels': int32 [N]} of uint8 images [N, H, W, C],
    and 'scores' float32 [N, S] where the export has them (score_names)."""
    images = self.check(images)
    empty = {'probabilities': np.zeros([0, len(self.class_names)], np.float32),
             'labels': np.zeros([0], np.int32)}
    if self.score_names:
      empty['scores'] = np.zeros([0, len(self.score_names)], np.float32)
    if not len(images):
      return empty
    out = self._run(np.ascontiguousarray(images))
    return {key: np.asarray(value, empty[key].dtype) for key, value in out.items()}


def open_classifier(export_dir) -> Classifier:
  """The export in export_dir, in its runtime (the module doc)."""
  return Classifier(export_dir)
