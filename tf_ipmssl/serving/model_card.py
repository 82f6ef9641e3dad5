"""The model card written beside every export (MODEL_CARD.md): what the classifier is, what
it takes and answers, what it was trained on, how it scored and the commands that made it,
for a person who has the export and not the run. Built from the export's metadata
(metadata.py) and a summary of the run (`summary`, below). This module does not import
TensorFlow.

summary: {'metrics': metrics.json's content (its 'best', 'final' and 'foreign_test'),
'checkpoint': 'best' or 'latest' (the one exported), 'counts': dataset.json's counts (images
per class of each split), 'source': where the data came from, 'trained_by': the training
command, 'exported_by': the export's command}; any may be missing.
"""
from typing import Optional

CARD_FILE = 'MODEL_CARD.md'


def _percent(value) -> str:
  return '–' if value is None else f'{value:.2f}%'


def _result(summary) -> list:
  """The lines on the exported checkpoint's errors."""
  metrics = summary.get('metrics') or {}
  checkpoint = summary.get('checkpoint')
  best, final = metrics.get('best') or {}, metrics.get('final') or {}
  counts = summary.get('counts') or {}
  test_images = sum(counts.get('test') or []) or None
  if checkpoint == 'best' and best.get('step', -1) >= 0:
    validation_images = sum(counts.get('validation') or []) or None
    return [f'- Test error: {_percent(best.get("test_error"))}'
            + (f' of {test_images:,} test images' if test_images else '')
            + f', at the best validation step {best["step"]} (validation error '
            f'{_percent(best.get("validation_error"))}'
            + (f' of {validation_images:,} images' if validation_images else '') + ')'
            + (f'; balanced error {_percent(best["test_balanced_error"])}'
               if best.get('test_balanced_error') is not None else '')]
  if final.get('step') is not None and final.get('step', -1) >= 0:
    return [f'- Test error: {_percent(final.get("test_error"))}'
            + (f' of {test_images:,} test images' if test_images else '')
            + f', at the last evaluated step {final["step"]}'
            + (f'; balanced error {_percent(final["test_balanced_error"])}'
               if final.get('test_balanced_error') is not None else '')]
  return []


def _foreign_test(summary) -> list:
  """The line on metrics.json's `foreign_test` (a run on a subset of its dataset's classes),
  where it measured the exported checkpoint."""
  measured = (summary.get('metrics') or {}).get('foreign_test')
  if not measured or measured.get('checkpoint') != summary.get('checkpoint'):
    return []
  name = measured['default']
  score = measured['scores'][name]
  return [f'- Test images of the dataset\'s other classes ({measured["foreign_images"]:,}): '
          f'AUROC {score["auroc"]:.3f} against the {measured["known_images"]:,} test images '
          f'of its classes by the default score ({name}); past its threshold '
          f'{score["rejected_foreign_pct"]:.1f}% of them, {score["rejected_known_pct"]:.1f}% '
          'of the known ones']


def text(metadata: dict, summary: Optional[dict] = None) -> str:
  """The model card (markdown) of an export with `metadata`, from the run's `summary`."""
  summary = summary or {}
  names = metadata.get('class_names') or []
  shape = metadata.get('image_shape') or []
  lines = [f'# {metadata.get("dataset") or "image"} classifier ({metadata.get("format")})', '',
           'Trained with tf_ipmssl (semi-supervised learning with IPM-based GANs: the GAN\'s '
           'critic is the classifier).', '',
           f'- Classes ({len(names)}), by label: '
           + ', '.join(f'{i} {n}' for i, n in enumerate(names))]
  if metadata.get('resize'):
    lines.append(f'- Input: `images`, uint8 [N, H, W, {shape[-1]}] of any one size, RGB '
                 f'order where colour; brought to {shape[0]}x{shape[1]} in the model by '
                 f'{metadata["resize"]}')
  else:
    lines.append(f'- Input: `images`, uint8 [N, {", ".join(map(str, shape))}], RGB order '
                 'where colour, 0..255')
  lines.append('- Output: `probabilities` [N, K], `labels` [N]'
               + (', `scores` [N, S]' if metadata.get('foreign_score') else ''))
  scoring = metadata.get('foreign_score')
  if scoring:
    thresholds = ', '.join(f'{n} {scoring["thresholds"][n]:.4g}' for n in scoring['names'])
    lines.append(f'- "None of these classes" scores, higher: less like the classes: '
                 f'{", ".join(scoring["names"])}; default {scoring["default"]}; thresholds '
                 f'{thresholds} ({scoring["rule"]})')
  counts = summary.get('counts') or {}
  if counts:
    parts = [f'{split} {sum(counts[split]):,} ({", ".join(map(str, counts[split]))} by class)'
             for split in ('labeled', 'validation', 'test') if counts.get(split)]
    if counts.get('unlabeled') is not None:
      parts.append(f'unlabeled {counts["unlabeled"]:,}'
                   + (f' ({counts["foreign_unlabeled"]:,} of other classes)'
                      if counts.get('foreign_unlabeled') else ''))
    lines.append(f'- Data: {metadata.get("dataset")}'
                 + (f' ({summary["source"]})' if summary.get('source') else '')
                 + ': ' + '; '.join(parts))
  lines += _result(summary) + _foreign_test(summary)
  for key, label in (('trained_by', 'Trained by'), ('exported_by', 'Exported by')):
    if summary.get(key):
      lines.append(f'- {label}: `{summary[key]}`')
  lines += ['', 'Decoding image files, and what to do to an image before the model: '
            "tf_ipmssl's docs/serving.md#decoding-image-files. The machine-readable "
            'description: tf_ipmssl_classifier.json beside this file (and inside the .onnx '
            'or .tflite file).', '']
  return '\n'.join(lines)
