"""What an export says about itself beside its model: tf_ipmssl_classifier.json.

Every export directory holds it, whatever its format, so that a runtime needs no code of the
training to know what the model takes and answers: the format and model file, the input's
size and dtype (uint8 [N, H, W, C]), the class names by label, the resize rule (None when the
model takes the run's own size only; otherwise the rule the model applies in its graph to
images of any size), the "none of these classes" scores it answers with their thresholds
(foreign_score.py: `foreign_score`), the run's dataset and the files the export wrote (`entries`, which a
later export may replace and nothing else). ONNX models carry the same fields in their
metadata_props as well. This module does not import TensorFlow.

History: an export written before the file listed them has no `entries` (export.py then
takes the files a SavedModel export writes), and a SavedModel export written before the file
existed has none (export.py).
"""
import json
import os

import numpy as np

from tf_ipmssl import errors
from tf_ipmssl.serving import foreign_score

METADATA_FILE = 'tf_ipmssl_classifier.json'


def describe(fmt, model_file, image_shape, num_classes, dataset, class_names, resize,
             scoring=None, **more):
  """The metadata of an export (the module doc); `scoring`: its "none of these classes"
  scores (foreign_score.describe; None: the export has none); `more`: format-specific
  fields."""
  described = {'format': fmt, 'model_file': model_file,
               'image_shape': [int(d) for d in image_shape], 'num_classes': int(num_classes),
               'dataset': dataset, 'input_dtype': 'uint8',
               'class_names': [str(n) for n in class_names], 'resize': resize}
  if scoring is not None:
    described[foreign_score.METADATA_KEY] = scoring
  return dict(described, **more)


def read(export_dir):
  """The metadata in export_dir (a dict), or None when it has none."""
  path = os.path.join(export_dir, METADATA_FILE)
  if not os.path.isfile(path):
    return None
  with open(path) as f:
    return json.load(f)


def checked_images(images, shape) -> np.ndarray:
  """images as a uint8 array [N, *shape] (shape: (H, W, C), or (C,) for an export that resizes
  images of any size), or a UserError naming the dtype or shape the classifier takes."""
  images = np.asarray(images)
  if images.dtype != np.uint8:
    raise errors.UserError(
        f'the classifier takes uint8 images (0..255), got dtype {images.dtype}; convert with '
        'np.asarray(images, np.uint8) before scaling')
  shape = tuple(shape)
  if images.ndim != 4 or tuple(images.shape[4 - len(shape):]) != shape:
    expected = ', '.join(map(str, shape))
    if len(shape) == 1:
      expected = f'H, W, {expected}'
    raise errors.UserError(
        f'the classifier takes images of shape [N, {expected}], got {list(images.shape)}')
  return images
