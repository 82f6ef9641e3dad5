"""Writes the first images of a run's test split as PNG files, with their labels, so that
bin/predict can be asked about exactly the images bin/evaluate scores (docs/serving.md).

  .venv/bin/python scripts/write_test_images.py --model_dir=runs/quickstart --count=1000 \
      --output=/tmp/quickstart_test

The test split is the one the run evaluates: its data rebuilt from its run_config.json
(ssl_data.build_ssl_data, as bin/evaluate does), in the dataset's order, each image as the
run's data holds it (Fashion-MNIST's 28x28x1, which the export takes; its padding to 32x32
is inside the export). OUTPUT (new or empty) gets images/test_00000.png, test_00001.png, ...
(the image's index in the split), the folder to give bin/predict, and beside it labels.csv:
file, label, class_name.
"""
import argparse
import csv
import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

IMAGES_DIR, LABELS_FILE = 'images', 'labels.csv'


def write_images(output, images, labels, class_names, count=None):
  """Writes images[:count] (uint8 [N, H, W, C]) as OUTPUT/images/test_<index>.png and their
  labels to OUTPUT/labels.csv; returns the file names in order. OUTPUT must be new or empty."""
  if os.path.exists(output) and (not os.path.isdir(output) or os.listdir(output)):
    raise SystemExit(f'{output} exists and is not an empty folder; choose a new --output')
  count = len(images) if count is None else count
  if not 0 < count <= len(images):
    raise SystemExit(f'--count must be in 1..{len(images)} (the split\'s images), not {count}')
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


def run_test_split(model_dir):
  """(images, labels, class names) of the test split of the run in model_dir."""
  from tf_ipmssl.data import ssl_data  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import run as run_lib  # pylint: disable=g-import-not-at-top
  data = ssl_data.build_ssl_data(run_lib.run_config_of(model_dir).build_ssl_data)
  return data.test_images, data.test_labels, data.class_names


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--model_dir', required=True, help='the run (bin/train) whose test '
                      'split is written')
  parser.add_argument('--output', required=True, help='a new or empty folder')
  parser.add_argument('--count', type=int, default=1000, help='the first COUNT images')
  args = parser.parse_args(argv)
  images, labels, class_names = run_test_split(args.model_dir)
  names = write_images(args.output, images, labels, class_names, args.count)
  print(f'Wrote the first {len(names)} of {len(images)} test images of {args.model_dir} '
        f'({images.shape[1]}x{images.shape[2]}x{images.shape[3]}) to '
        f'{os.path.join(args.output, IMAGES_DIR)}, their labels to '
        f'{os.path.join(args.output, LABELS_FILE)}')


if __name__ == '__main__':
  main(sys.argv[1:])
