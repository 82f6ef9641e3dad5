"""bin/train with label splits as users have them: an imbalanced labeled set, class mismatch
with foreign unlabeled images, and a validation split of a number per class each train and
record the setting (run_config.json) and the split drawn (dataset.json's counts); an
impossible one is refused in one line before the model directory exists."""
import json
import os

import numpy as np
import pytest

from tests.training import runs
from tf_ipmssl.data import splits


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  return runs.make_data(tmp_path_factory.mktemp('data'), num_train=400)


def _record(model_dir):
  def read(name):
    with open(os.path.join(model_dir, name)) as f:
      return json.load(f)
  return read('run_config.json')['build_ssl_data'], read('dataset.json'), read('metrics.json')


@pytest.mark.parametrize('overrides, check', [
    ({'build_ssl_data.num_labeled': 40, 'build_ssl_data.imbalance_ratio': 10.0},
     lambda settings, dataset: (
         settings['imbalance_ratio'] == 10.0 and
         dataset['counts']['labeled'] == splits.geometric_counts(40, 10, 10.0))),
    ({'build_ssl_data.num_labeled': 12, 'build_ssl_data.classes': (0, 1, 2, 3, 4, 5),
      'build_ssl_data.unlabeled_size': 100, 'build_ssl_data.foreign_share': 0.5},
     lambda settings, dataset: (
         settings['classes'] == [0, 1, 2, 3, 4, 5] and settings['foreign_share'] == 0.5 and
         dataset['num_classes'] == 6 and len(dataset['class_names']) == 6 and
         dataset['counts']['unlabeled'] == 100 and
         dataset['counts']['foreign_unlabeled'] == 50)),
    ({'build_ssl_data.validation_size': 0, 'build_ssl_data.validation_per_class': 2},
     lambda settings, dataset: (
         settings['validation_per_class'] == 2 and
         dataset['counts']['validation'] == [2] * 10)),
], ids=['imbalance', 'mismatch', 'validation_per_class'])
def test_a_run_trains_and_records_its_label_split(data_dir, tmp_path, overrides, check):
  model_dir = str(tmp_path / 'run')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **overrides))
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
  settings, dataset, metrics = _record(model_dir)
  assert check(settings, dataset)
  assert metrics['finished']
  # The per-class results have the run's classes, and rows that sum to its test counts.
  confusion = np.array(metrics['final']['test_confusion'])
  assert confusion.shape == (dataset['num_classes'],) * 2
  assert confusion.sum(axis=1).tolist() == dataset['counts']['test']
  assert list(metrics['final']['test_class_errors']) == dataset['class_names']


@pytest.mark.parametrize('overrides, fragment', [
    ({'build_ssl_data.imbalance_ratio': 500.0}, 'lower build_ssl_data.imbalance_ratio'),
    ({'build_ssl_data.classes': (0, 1), 'build_ssl_data.unlabeled_size': 1000,
      'build_ssl_data.foreign_share': 0.5}, 'lower unlabeled_size'),
    ({'build_ssl_data.validation_size': 0, 'build_ssl_data.validation_per_class': 60},
     'lower validation_per_class'),
    ({'build_ssl_data.labeled_per_class': (3, 3)}, 'bind num_labeled = None'),
])
def test_an_impossible_label_split_is_refused_before_the_model_dir_exists(
    data_dir, tmp_path, overrides, fragment):
  model_dir = str(tmp_path / 'run')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **overrides))
  assert result.returncode == 1, result.stderr[-2000:]
  lines = result.stderr.strip().splitlines()
  assert lines[-1].startswith('error: ') and fragment in lines[-1], result.stderr[-2000:]
  assert 'Traceback' not in result.stderr
  assert not os.path.exists(model_dir)
