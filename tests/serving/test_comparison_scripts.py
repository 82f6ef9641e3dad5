"""The programs behind docs/serving.md's agreement figures: bin/write_test_images writes a
run's first test images as PNG files (the pixels and labels of the run's test split, in its
order; tf_ipmssl/serving/test_images.py), and bin/compare_predictions compares bin/predict's
CSV files (tf_ipmssl/serving/prediction_comparison.py)."""
import csv
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import fixtures
from tests.training import runs
from tf_ipmssl import errors
from tf_ipmssl.data import ssl_data
from tf_ipmssl.serving import prediction_comparison as compare_predictions
from tf_ipmssl.serving import test_images as write_test_images

BIN = runs.REPO_ROOT / 'bin'


@pytest.fixture(scope='module')
def data(tmp_path_factory):
  directory = tmp_path_factory.mktemp('data')
  fixtures.make_fake_dataset(str(directory), 'fashion_mnist', num_train=100, num_test=30)
  return ssl_data.build_ssl_data(ssl_data.BuildSslData(
      dataset='fashion_mnist', source='local', data_dir=str(directory), num_labeled=20,
      validation_size=20))


def test_writes_the_first_test_images_and_their_labels(data, tmp_path):
  output = tmp_path / 'images'
  names = write_test_images.write_images(str(output), data.test_images, data.test_labels,
                                         data.class_names, count=12)
  assert names == [f'test_{i:05d}.png' for i in range(12)]
  assert sorted(os.listdir(output)) == ['images', 'labels.csv']
  assert sorted(os.listdir(output / 'images')) == names  # Nothing else for bin/predict.
  for i, name in enumerate(names):
    decoded = tf.io.decode_png(tf.io.read_file(str(output / 'images' / name))).numpy()
    np.testing.assert_array_equal(decoded, data.test_images[i])  # 28x28x1, lossless.
  with open(output / 'labels.csv', newline='') as f:
    rows = list(csv.DictReader(f))
  assert [r['file'] for r in rows] == names
  assert [int(r['label']) for r in rows] == data.test_labels[:12].tolist()
  assert [r['class_name'] for r in rows] == [data.class_names[l] for l in data.test_labels[:12]]


def test_refuses_a_folder_in_use_and_a_bad_count(data, tmp_path):
  (tmp_path / 'used').mkdir()
  (tmp_path / 'used' / 'mine.txt').write_text('mine')
  with pytest.raises(errors.ConfigError, match='not an empty folder'):
    write_test_images.write_images(str(tmp_path / 'used'), data.test_images, data.test_labels,
                                   data.class_names, count=3)
  with pytest.raises(errors.ConfigError, match='--count must be in 1..30'):
    write_test_images.write_images(str(tmp_path / 'new'), data.test_images, data.test_labels,
                                   data.class_names, count=31)
  assert not (tmp_path / 'new').exists()


def _csv(path, class_names, answers, scored=False):
  """A CSV as bin/predict --output writes it (path, class_name, probability, then each
  class's probability in a column named after it; `scored`: then an export's score columns,
  here the softmax score's) of {file: probabilities}."""
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(['path', 'class_name', 'probability', *class_names,
                     *(['score', 'none_of_these', 'score_softmax'] if scored else [])])
    for name, p in answers.items():
      label = int(np.argmax(p))
      score = [f'{1 - p[label]:.9g}', 0, f'{1 - p[label]:.9g}'] if scored else []
      writer.writerow([f'images/{name}', class_names[label], f'{p[label]:.9g}',
                       *(f'{q:.9g}' for q in p), *score])
  return str(path)


def test_compares_labels_probabilities_and_errors(tmp_path):
  classes = ['a', 'b', 'c']
  reference = {'x.png': [0.7, 0.2, 0.1], 'y.png': [0.1, 0.5, 0.4], 'z.png': [0.2, 0.3, 0.5]}
  other = {'z.png': [0.2, 0.3, 0.5], 'y.png': [0.1, 0.44, 0.46], 'x.png': [0.7, 0.2, 0.1]}
  labels = tmp_path / 'labels.csv'
  labels.write_text('file,label,class_name\nx.png,0,a\ny.png,1,b\nz.png,1,b\n')
  named = [('saved_model', _csv(tmp_path / 'sm.csv', classes, reference)),
           ('litert_int8', _csv(tmp_path / 'int8.csv', classes, other, scored=True))]
  rows = compare_predictions.compare(named, write_test_images.read_labels(str(labels)))
  assert [(r['name'], r['images'], r['agree'], r['errors']) for r in rows] == [
      ('saved_model', 3, 3, 1), ('litert_int8', 3, 2, 2)]
  assert rows[0]['max_abs_diff'] == 0
  assert rows[1]['max_abs_diff'] == pytest.approx(0.06)
  result = subprocess.run(
      [sys.executable, str(BIN / 'compare_predictions'), f'--labels={labels}',
       *(f'{n}={p}' for n, p in named)], capture_output=True, text=True, check=True)
  assert result.stdout.splitlines()[2:] == ['| saved_model | 3 | 3 | 0 | 33.33% (1) |',
                                            '| litert_int8 | 3 | 2 | 0.06 | 66.67% (2) |']


def test_refuses_csvs_of_other_images(tmp_path):
  classes = ['a', 'b']
  named = [('saved_model', _csv(tmp_path / 'sm.csv', classes, {'x.png': [0.6, 0.4]})),
           ('onnx', _csv(tmp_path / 'onnx.csv', classes, {'y.png': [0.6, 0.4]}))]
  with pytest.raises(errors.ConfigError, match='hold other files'):
    compare_predictions.compare(named)
