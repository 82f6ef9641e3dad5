"""The classifier as an ONNX model, served by onnxruntime without TensorFlow.

Converted with tf2onnx from the tf.function of portable_graph.serving_function (tf2onnx's
from_function freezes the critic's variables into the graph): uint8 images `images` in,
`probabilities`, `labels` and the scores `scores` (score_graph.py) out, the input transform
and, for a run whose images were
resized, the resize rule inside. The class names, input size and resize rule are also in the
model's metadata_props (JSON values), so that any ONNX runtime can read them without the
metadata file beside it. Written by export.write_export's crash-safe rules.
"""
import json

import tensorflow as tf

from tf_ipmssl.serving import export
from tf_ipmssl.serving import formats
from tf_ipmssl.serving import metadata as metadata_lib
from tf_ipmssl.serving import portable_graph

# ONNX operator set: 17 has every op the graph needs and is served by onnxruntime >= 1.13.
OPSET = 17
MODEL_FILE = formats.FORMATS[formats.ONNX].model_file


def export_onnx(critic, image_shape, export_dir, num_classes, dataset='', class_names=None,
                resize=None, scoring=None, summary=None):
  """Writes the ONNX export of the classifier to export_dir (export.export_classifier's
  arguments); returns export_dir."""
  import tf2onnx  # pylint: disable=g-import-not-at-top  (the `onnx` extra)
  image_shape = tuple(int(d) for d in image_shape)
  class_names = [str(n) for n in class_names or range(num_classes)]
  spec = portable_graph.input_spec(image_shape, resize)
  serve = tf.function(portable_graph.serving_function(critic, image_shape, resize, scoring),
                      input_signature=[spec])
  metadata = metadata_lib.describe(formats.ONNX, MODEL_FILE, image_shape, num_classes,
                                   dataset, class_names, resize, scoring, opset=OPSET)

  export.check_export_dir(export_dir)  # Before the conversion.
  model, _ = tf2onnx.convert.from_function(serve, input_signature=[spec], opset=OPSET)
  for key, value in metadata.items():
    entry = model.metadata_props.add()
    entry.key, entry.value = key, json.dumps(value)
  model.producer_name = 'tf_ipmssl'

  def write(tmp_dir):
    with tf.io.gfile.GFile(f'{tmp_dir}/{MODEL_FILE}', 'wb') as f:
      f.write(model.SerializeToString())

  return export.write_export(export_dir, write, metadata, summary)
