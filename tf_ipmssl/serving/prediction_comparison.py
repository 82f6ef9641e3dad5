"""bin/predict's CSV files (--output) of one set of images, written by several exports of a
classifier, compared with the first's: what bin/compare_predictions prints (docs/serving.md).

Rows are matched by file name (the path's last part). Per CSV: the images, on how many its
label equals the first CSV's, the largest absolute difference of any class's probability
from the first CSV's, and with labels (test_images.read_labels) its error on these images.
"""
import csv
import os

import numpy as np

from tf_ipmssl import errors


def read_predictions(path):
  """{file name: (class_name, probabilities [K])} of a bin/predict CSV, and the class names
  (the columns after `probability`, up to the scores' `score` where the export has them)."""
  with open(path, newline='') as f:
    reader = csv.reader(f)
    header = next(reader)
    end = header.index('score') if 'score' in header else len(header)
    class_names = header[3:end]
    rows = {}
    for row in reader:
      rows[os.path.basename(row[0])] = (row[1], np.array(row[3:end], np.float64))
  return rows, class_names


def compare(named_csvs, labels=None):
  """One dict per (name, CSV path) of named_csvs: name, images, agree (labels equal to the
  first's), max_abs_diff (probabilities), and with `labels` ({file: class name}) errors."""
  (_, reference_path), *_ = named_csvs
  reference, reference_classes = read_predictions(reference_path)
  rows = []
  for name, path in named_csvs:
    predictions, class_names = read_predictions(path)
    if class_names != reference_classes:
      raise errors.ConfigError(f'{path} names other classes than {reference_path}')
    if sorted(predictions) != sorted(reference):
      raise errors.ConfigError(f'{path} and {reference_path} hold other files')
    files = sorted(predictions)
    agree = sum(predictions[f][0] == reference[f][0] for f in files)
    diff = max(float(np.max(np.abs(predictions[f][1] - reference[f][1]))) for f in files)
    row = {'name': name, 'images': len(files), 'agree': agree, 'max_abs_diff': diff}
    if labels is not None:
      missing = [f for f in files if f not in labels]
      if missing:
        raise errors.ConfigError(f'no label for {missing[0]} (and {len(missing) - 1} more)')
      row['errors'] = sum(predictions[f][0] != labels[f] for f in files)
    rows.append(row)
  return rows


def table(rows):
  """The markdown table of compare's rows."""
  reference = rows[0]['name']
  with_errors = 'errors' in rows[0]
  lines = ['| format | images | labels equal to ' + reference + "'s | max abs. probability "
           'difference' + (' | error on these images |' if with_errors else ' |'),
           '|---|---:|---:|---:|' + ('---:|' if with_errors else '')]
  for r in rows:
    line = f"| {r['name']} | {r['images']} | {r['agree']} | {r['max_abs_diff']:.3g} |"
    if with_errors:
      line += f" {100 * r['errors'] / r['images']:.2f}% ({r['errors']}) |"
    lines.append(line)
  return lines
