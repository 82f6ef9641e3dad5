"""The classifier as a LiteRT (TensorFlow Lite) flatbuffer, served by ai-edge-litert's
interpreter without TensorFlow; optionally with dynamic-range quantization.

Converted by tf.lite.TFLiteConverter from a SavedModel of portable_graph.serving_function
written to a scratch directory: converting the tf.function directly
(from_concrete_functions) gave a model whose answers were wrong (NaN or one class at
probability 1) with TensorFlow 2.21 and Keras 3 variables, while the SavedModel path answers
as TensorFlow does. The model has one signature, `serving_default`: uint8 `images` in,
`probabilities`, `labels` and the scores `scores` (score_graph.py) out, the input transform
and any resize rule inside. The class
names, input size and resize rule, the scores and everything else of the metadata file beside
it (metadata.py) are also inside the flatbuffer, as the model's metadata entry METADATA_NAME
(a JSON buffer, litert_metadata.py reads it with the LiteRT package alone), so that the
.tflite file describes itself.

Quantized (`litert_int8`): the converter's dynamic-range quantization stores the weights as
int8 (a quarter of the size) and computes with float activations; labels mostly agree with
the float model's, probabilities less closely. Written by export.write_export's rules.
"""
import json
import tempfile

import keras
import numpy as np
import tensorflow as tf

from tf_ipmssl.serving import export
from tf_ipmssl.serving import formats
from tf_ipmssl.serving import litert_metadata
from tf_ipmssl.serving import metadata as metadata_lib
from tf_ipmssl.serving import portable_graph

MODEL_FILE = formats.FORMATS[formats.LITERT].model_file
METADATA_NAME = litert_metadata.METADATA_NAME


def with_metadata(model: bytes, metadata: dict) -> bytes:
  """The flatbuffer `model` with `metadata` (JSON) as its metadata entry METADATA_NAME
  (replacing one of that name): a buffer of its bytes, named in the model's metadata list,
  which the interpreter ignores and litert_metadata.read returns."""
  from tensorflow.lite.tools import flatbuffer_utils  # pylint: disable=g-import-not-at-top
  from tensorflow.lite.python import schema_py_generated as schema  # pylint: disable=g-import-not-at-top
  tree = flatbuffer_utils.convert_bytearray_to_object(bytearray(model))
  data = schema.BufferT()
  data.data = np.frombuffer(json.dumps(metadata, sort_keys=True).encode('utf-8'), np.uint8)
  tree.buffers.append(data)
  entry = schema.MetadataT()
  entry.name, entry.buffer = METADATA_NAME, len(tree.buffers) - 1
  tree.metadata = [m for m in (tree.metadata or [])
                   if m.name not in (METADATA_NAME, METADATA_NAME.encode())] + [entry]
  return flatbuffer_utils.convert_object_to_bytearray(tree)


def convert(critic, image_shape, resize, quantize=False, scoring=None):
  """The LiteRT flatbuffer (bytes) of the classifier (the module doc)."""
  archive = keras.export.ExportArchive()
  archive.track(critic)
  archive.add_endpoint(
      name=export.SIGNATURE_KEY,
      fn=portable_graph.serving_function(critic, image_shape, resize, scoring),
      input_signature=[portable_graph.input_spec(image_shape, resize)])
  with tempfile.TemporaryDirectory() as scratch:
    archive.write_out(scratch, verbose=False)
    converter = tf.lite.TFLiteConverter.from_saved_model(
        scratch, signature_keys=[export.SIGNATURE_KEY])
    if quantize:
      converter.optimizations = [tf.lite.Optimize.DEFAULT]  # Dynamic range: int8 weights.
    return converter.convert()


def export_litert(critic, image_shape, export_dir, num_classes, dataset='', class_names=None,
                  resize=None, quantize=False, scoring=None, summary=None):
  """Writes the LiteRT export of the classifier to export_dir (export.export_classifier's
  arguments; `quantize`: int8 weights); returns export_dir."""
  image_shape = tuple(int(d) for d in image_shape)
  class_names = [str(n) for n in class_names or range(num_classes)]
  name = formats.LITERT_INT8 if quantize else formats.LITERT
  metadata = metadata_lib.describe(
      name, MODEL_FILE, image_shape, num_classes, dataset, class_names, resize, scoring,
      signature=export.SIGNATURE_KEY,
      quantization='dynamic range (int8 weights)' if quantize else None)
  export.check_export_dir(export_dir)  # Before the (long) conversion.
  model = with_metadata(convert(critic, image_shape, resize, quantize, scoring), metadata)

  def write(tmp_dir):
    with tf.io.gfile.GFile(f'{tmp_dir}/{MODEL_FILE}', 'wb') as f:
      f.write(model)

  return export.write_export(export_dir, write, metadata, summary)
