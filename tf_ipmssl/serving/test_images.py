"""A split's images as PNG files with their labels: what bin/write_test_images writes, so that
bin/predict can be asked about exactly the images bin/evaluate scores (docs/serving.md).

OUTPUT (new or empty) gets images/test_00000.png, test_00001.png, ... (the image's index in
the split), the folder to give bin/predict, and beside it labels.csv: file, label,
class_name. PNG is lossless: bin/predict reads back the pixels the run's data holds.
"""
import csv
import os

import numpy as np
import tensorflow as tf

from tf_ipmssl import errors

IMAGES_DIR, LABELS_FILE = 'images', 'labels.csv'


def write_images(output, images, labels, class_names, count=None):
  """Writes images[:count] (uint8 [N, H, W, C]) as OUTPUT/images/test_<index>.png and their
  labels to OUTPUT/labels.csv; returns the file names in order. OUTPUT must be new or empty."""
  if os.path.exists(output) and (not os.path.isdir(output) or os.listdir(output)):
    raise errors.ConfigError(f'{output} exists and is not an empty folder; choose a new '
                             '--output')
  count = len(images) if count is None else count
  if not 0 < count <= len(images):
    raise errors.ConfigError(f'--count must be in 1..{len(images)} (the split\'s images), '
                             f'not {count}')
  images, labels = np.asarray(images[:count], np.uint8), np.asarray(labels[:count])
  os.makedirs(os.path.join(output, IMAGES_DIR))
  names = [f'test_{i:05d}.png' for i in range(count)]
  for name, image in zip(names, images):
    tf.io.write_file(os.path.join(output, IMAGES_DIR, name), tf.io.encode_png(image))
  with open(os.path.join(output, LABELS_FILE), 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(['file', 'label', 'class_name'])
    for name, label in zip(names, labels):
      writer.writerow([name, int(label), class_names[int(label)] if class_names else ''])
  return names


def read_labels(path):
  """{file name: class_name} of a labels.csv `write_images` wrote."""
  with open(path, newline='') as f:
    return {row['file']: row['class_name'] for row in csv.DictReader(f)}
