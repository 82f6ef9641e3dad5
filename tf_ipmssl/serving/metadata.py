"""What an export says about itself beside its model: tf_ipmssl_classifier.json.

Every export directory holds it, whatever its format, so that a runtime needs no code of the
training to know what the model takes and answers: the format and model file, the input's
size and dtype (uint8 [N, H, W, C]), the class names by label, the resize rule (None when the
model takes the run's own size only; otherwise the rule the model applies in its graph to
images of any size), the run's dataset and the files the export wrote (`entries`, which a
later export may replace and nothing else). ONNX models carry the same fields in their
metadata_props as well. This module does not import TensorFlow.
"""
import json
import os

METADATA_FILE = 'tf_ipmssl_classifier.json'


def describe(fmt, model_file, image_shape, num_classes, dataset, class_names, resize,
             **more):
  """The metadata of an export (the module doc); `more`: format-specific fields."""
  return dict({'format': fmt, 'model_file': model_file,
               'image_shape': [int(d) for d in image_shape], 'num_classes': int(num_classes),
               'dataset': dataset, 'input_dtype': 'uint8',
               'class_names': [str(n) for n in class_names], 'resize': resize}, **more)


def read(export_dir):
  """The metadata in export_dir (a dict), or None when it has none."""
  path = os.path.join(export_dir, METADATA_FILE)
  if not os.path.isfile(path):
    return None
  with open(path) as f:
    return json.load(f)
