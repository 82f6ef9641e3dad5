"""Per-class results of a classifier on a split: its confusion matrix, each class's error and
the balanced error, as metrics.json, bin/evaluate and TensorBoard give them.

The confusion matrix C holds counts, rows the true class and columns the predicted one, so
row c sums to the split's images of class c and the trace counts the correct answers: the
split's error is percent(ΣC − trace C, ΣC), the same division reporting.percent makes of the
mistakes counted one by one. Class c's error is percent(row c − C[c, c], row c), None for a
class the split has no image of; the balanced error is the mean of the classes' errors that
exist (docs/algorithm.md#per-class-results). Pure NumPy.
"""
import math
from typing import Optional, Sequence

import numpy as np

from tf_ipmssl.run_dir import reporting


def confusion_matrix(labels, predicted, num_classes: int) -> np.ndarray:
  """int64 [K, K]: entry [t, p] counts the examples of true class t predicted as p."""
  labels = np.asarray(labels, np.int64).reshape(-1)
  predicted = np.asarray(predicted, np.int64).reshape(-1)
  if labels.shape != predicted.shape:
    raise ValueError(f'{labels.size} labels but {predicted.size} predictions')
  for name, values in (('labels', labels), ('predictions', predicted)):
    if values.size and (values.min() < 0 or values.max() >= num_classes):
      raise ValueError(f'{name} span [{values.min()}, {values.max()}], outside '
                       f'[0, {num_classes - 1}]')
  counts = np.bincount(labels * num_classes + predicted, minlength=num_classes * num_classes)
  return counts.reshape(num_classes, num_classes).astype(np.int64)


def error(confusion) -> float:
  """The split's error in percent: the mistakes (off the diagonal) over its images."""
  confusion = np.asarray(confusion)
  total = int(confusion.sum())
  return reporting.percent(total - int(np.trace(confusion)), total)


def class_errors(confusion) -> list:
  """Each class's error in percent, by true class (None for a class without images)."""
  confusion = np.asarray(confusion)
  rows = confusion.sum(axis=1)
  return [None if not rows[c] else reporting.percent(int(rows[c] - confusion[c, c]),
                                                     int(rows[c]))
          for c in range(len(rows))]


def balanced_error(confusion) -> Optional[float]:
  """The mean of the classes' errors (classes without images left out; None for none)."""
  present = [e for e in class_errors(confusion) if e is not None]
  return math.fsum(present) / len(present) if present else None


def results(split: str, confusion, class_names: Sequence[str]) -> dict:
  """metrics.json's per-class keys of `split` ('test', 'validation'), each None where the
  confusion matrix is None (not computed): `<split>_confusion` (a list of rows),
  `<split>_class_errors` ({class name: error}) and `<split>_balanced_error`."""
  if confusion is None:
    return {f'{split}_{key}': None for key in KEYS}
  confusion = np.asarray(confusion, np.int64)
  return {f'{split}_confusion': confusion.tolist(),
          f'{split}_class_errors': dict(zip(class_names, class_errors(confusion))),
          f'{split}_balanced_error': balanced_error(confusion)}


def of_variables(variables, class_names) -> dict:
  """metrics.json's per-class keys (`results`) of each of SPLITS from run.RunState's `best`
  or `latest` variables `<split>_confusion` (a matrix of -1: not computed)."""
  out = {}
  for split in SPLITS:
    confusion = variables[f'{split}_confusion'].numpy()
    out.update(results(split, None if (confusion < 0).any() else confusion, class_names))
  return out


# The per-class keys of a split in metrics.json's `best` and `final` (see `results`).
KEYS = ('confusion', 'class_errors', 'balanced_error')
# The splits whose per-class results a run reports.
SPLITS = ('validation', 'test')


def image(confusion, cell: int = 12) -> np.ndarray:
  """uint8 [1, K·cell, K·cell, 3]: the confusion matrix as a picture for TensorBoard, each
  row scaled by its class's images (white 0, dark blue all of them), the diagonal in green."""
  confusion = np.asarray(confusion, np.float64)
  rows = np.maximum(confusion.sum(axis=1, keepdims=True), 1.0)
  share = confusion / rows
  k = len(confusion)
  rgb = np.empty([k, k, 3])
  rgb[..., 0] = 1.0 - share
  rgb[..., 1] = 1.0 - 0.6 * share
  rgb[..., 2] = 1.0 - 0.2 * share
  diagonal = np.arange(k)
  rgb[diagonal, diagonal, 0] = 1.0 - share[diagonal, diagonal]
  rgb[diagonal, diagonal, 1] = 1.0 - 0.3 * share[diagonal, diagonal]
  rgb[diagonal, diagonal, 2] = 1.0 - share[diagonal, diagonal]
  pixels = np.repeat(np.repeat(rgb, cell, axis=0), cell, axis=1)
  return np.round(255 * pixels)[None].astype(np.uint8)
