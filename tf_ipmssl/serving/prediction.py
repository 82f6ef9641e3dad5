"""Classifying image files with an exported classifier (api.predict, bin/predict), from the
export alone.

`Predictor(export_dir)` serves an ONNX or LiteRT export in its own runtime (runtimes.py:
onnxruntime, ai-edge-litert), learning its input size and class names from its metadata; a
SavedModel it loads with tf.saved_model.load and learns what it needs from its signatures
(which every SavedModel export has, with or without the metadata file: export.py): the
input's size and channels (any size for an image folder's export, which resizes in its
graph) and every class's name (the `class_names` signature; '0', '1', ... where an older
export lacks it: export.py). Files are decoded by TensorFlow (PNG, JPEG, BMP, GIF, WebP)
whatever the format, brought to the export's channel count (image_rules.to_channels) and
classified in batches of one size, with the export's "none of these classes" scores where it
has them (foreign_score.py; the metadata file names them). A file that cannot be classified (unreadable, not an
image, an animated WebP, another size than a fixed-size export takes) is reported with its
reason; the others are classified.
"""
import dataclasses
import os
import re
from typing import Iterator, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl import quiet_import
from tf_ipmssl.data import image_folder
from tf_ipmssl.data import image_rules
from tf_ipmssl.serving import export
from tf_ipmssl.serving import foreign_score
from tf_ipmssl.serving import metadata as metadata_lib
from tf_ipmssl.serving import runtimes
# Files decoded and classified at a time, and the largest batch sent to the signature.
CHUNK = 256
BATCH = 64


@dataclasses.dataclass(frozen=True)
class Prediction:
  """One file's answer: `probabilities` [K] and the predicted class, and `scores` [S] (the
  export's "none of these classes" scores: Predictor.score_names; None for an export without
  them); or `problem`, why it could not be classified (then the rest are None)."""
  path: str
  class_name: Optional[str] = None
  probability: Optional[float] = None
  probabilities: Optional[np.ndarray] = None
  problem: Optional[str] = None
  scores: Optional[np.ndarray] = None


def image_paths(paths: Sequence[str]) -> List[str]:
  """The files to classify: each path that is not a folder, and every visible file inside
  each folder at any depth (image_folder.list_files: through symbolic links, each real file
  once, a link loop not followed), in the order given."""
  found = []
  for path in paths:
    found += image_folder.list_files(path) if os.path.isdir(path) else [path]
  return found


class Predictor:
  """An exported classifier, reloaded from export_dir (see the module doc)."""

  def __init__(self, export_dir):
    # The scores' names and threshold rule (foreign_score.py), from the metadata file.
    self.metadata = metadata_lib.read(export_dir) or {}
    scoring = self.metadata.get(foreign_score.METADATA_KEY)
    self.score_names = tuple(scoring['names']) if scoring else ()
    if not tf.io.gfile.exists(os.path.join(export_dir, 'saved_model.pb')):
      classifier = runtimes.open_classifier(export_dir)  # ONNX or LiteRT (or a UserError).
      self.input_shape = classifier.input_shape
      self.class_names = classifier.class_names
      self._serve = lambda images: classifier(images.numpy())
      return
    module = tf.saved_model.load(export_dir)
    if export.SIGNATURE_KEY not in module.signatures:
      raise errors.UserError(f'{export_dir} has no {export.SIGNATURE_KEY!r} signature; it is not a '
                             'classifier exported by bin/train or bin/export')
    self._serve = module.signatures[export.SIGNATURE_KEY]
    _, inputs = self._serve.structured_input_signature
    # [N, H, W, C]; H and W unknown where the export resizes images of any size.
    self.input_shape = tuple(inputs['images'].shape.as_list()[1:])
    if export.CLASS_NAMES_KEY in module.signatures:
      names = module.signatures[export.CLASS_NAMES_KEY]()['class_names'].numpy()
      self.class_names = tuple(n.decode('utf-8') for n in names)
    else:
      blank = np.zeros([1, *(d or 32 for d in self.input_shape)], np.uint8)
      count = self._serve(images=tf.constant(blank))['probabilities'].shape[-1]
      self.class_names = tuple(str(label) for label in range(count))

  @property
  def channels(self) -> int:
    return self.input_shape[-1]

  def _load(self, path):
    """uint8 [H, W, C] of the file at `path`, or the reason it cannot be classified."""
    try:
      contents = tf.io.read_file(path)
      if image_rules.is_animated_webp(contents):
        return f'is {image_rules.ANIMATED_WEBP}; save its first frame as a still image'
      image = image_rules.decode(contents)
    except (tf.errors.OpError, OSError) as e:
      # TensorFlow's message without its `{{function_node ...}}` prefix and `[Op:...]` suffix.
      reason = re.sub(r'\{\{.*?\}\}\s*|\s*\[Op:.*$', '', getattr(e, 'message', str(e)).strip())
      return f'not a readable {image_rules.IMAGE_FORMATS} image ({reason})'
    image = image_rules.to_channels(image, self.channels).numpy()
    height, width = self.input_shape[:2]
    if height is not None and image.shape[:2] != (height, width):
      return (f'is {image.shape[0]}x{image.shape[1]}; this classifier takes '
              f'{height}x{width} images')
    return image

  def _classify(self, images):
    """(probabilities [N, K], scores [N, S] or None) of uint8 images [N, H, W, C] of one
    size."""
    answers = [self._serve(images=tf.constant(images[i:i + BATCH]))
               for i in range(0, len(images), BATCH)]
    probabilities = np.concatenate([np.asarray(a['probabilities']) for a in answers])
    if not self.score_names:
      return probabilities, None
    return probabilities, np.concatenate([np.asarray(a['scores']) for a in answers])

  def predict(self, paths: Sequence[str]) -> Iterator[Prediction]:
    """One Prediction per file of `paths`, in their order."""
    for start in range(0, len(paths), CHUNK):
      chunk = paths[start:start + CHUNK]
      with quiet_import.decoder_lines_dropped():  # Each damaged file is named below.
        loaded = [self._load(path) for path in chunk]
      probabilities, scores = [None] * len(chunk), [None] * len(chunk)
      by_shape = {}
      for i, image in enumerate(loaded):
        if not isinstance(image, str):
          by_shape.setdefault(image.shape, []).append(i)
      for indices in by_shape.values():
        p, q = self._classify(np.stack([loaded[i] for i in indices]))
        for row, i in enumerate(indices):
          probabilities[i], scores[i] = p[row], None if q is None else q[row]
      for path, image, p, q in zip(chunk, loaded, probabilities, scores):
        if p is None:
          yield Prediction(path, problem=image)
        else:
          label = int(np.argmax(p))
          yield Prediction(path, self.class_names[label], float(p[label]), p, scores=q)
