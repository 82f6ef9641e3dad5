"""studies/foreign_score/foreign_score_auroc.py, behind docs/foreign_score.md's table: the foreign images it
makes, and its numbers for a tiny run on half of its classes counted pair by pair from the
scores of the run's best critic (score_graph.score_images, the script's own computation, run
here again: equal on any CPU; that these are the export's scores within float32 rounding is
test_foreign_score.py's), and its thresholds those of the run's export."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.serving import counting
from tests.training import runs
from tf_ipmssl import api
from tf_ipmssl.serving import score_graph

SCRIPT = runs.REPO_ROOT / 'studies' / 'foreign_score' / 'foreign_score_auroc.py'


def _script():
  spec = importlib.util.spec_from_file_location('foreign_score_auroc', SCRIPT)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


auroc_script = _script()


def test_the_foreign_images_are_made_as_documented():
  rng = np.random.default_rng(1)  # Not the noise's seed (0).
  known = rng.integers(0, 256, [3, 28, 28, 1], dtype=np.uint8)
  other = rng.integers(0, 256, [2, 28, 28, 1], dtype=np.uint8)
  picture = rng.integers(0, 256, [300, 280, 3], dtype=np.uint8)
  made = auroc_script.foreign_images(known, other, picture=picture)
  assert tuple(made) == auroc_script.KINDS
  assert made['other classes'] is other
  np.testing.assert_array_equal(made['inverted'].astype(int), 255 - known.astype(int))
  for i in range(3):
    np.testing.assert_array_equal(made['rotated'][i, :, :, 0], np.rot90(known[i, :, :, 0]))
    for r in range(28):
      for c in range(28):
        assert made['blocky'][i, r, c, 0] == known[i, r - r % 4, c - c % 4, 0]
  # Noise: uniform uint8 from the documented seed 0, drawn first.
  np.testing.assert_array_equal(
      made['noise'], np.random.default_rng(0).integers(0, 256, known.shape, dtype=np.uint8))
  # Photo crops: a uniform picture gives its own grey; each crop is of the picture.
  grey = auroc_script.photo_crops(np.full([300, 280, 3], 77, np.uint8), 4, (28, 28, 1))
  assert grey.shape == (4, 28, 28, 1) and (grey == 77).all()
  assert made['photo crops'].shape == known.shape
  np.testing.assert_array_equal(made['photo crops'],
                                auroc_script.photo_crops(picture, 3, (28, 28, 1)))
  assert made['photo crops'].std() > 0


@pytest.fixture(scope='module')
def mismatched_run(tmp_path_factory):
  """A tiny K+1 run on 5 of the 10 classes, half its unlabeled images foreign, exported."""
  data_dir = runs.make_data(tmp_path_factory.mktemp('data'))
  model_dir = str(tmp_path_factory.mktemp('run') / 'model')
  api.train(model_dir, [runs.SSL_GIN], runs.tiny_bindings(data_dir, **{
      'build_ssl_data.classes': '(0, 1, 2, 3, 4)', 'build_ssl_data.num_labeled': 10,
      'build_ssl_data.validation_size': 10, 'build_ssl_data.unlabeled_size': 40,
      'build_ssl_data.foreign_share': 0.5,
      'build_critic.normalization': "'layer_norm_singleton_per_channel'"}))
  return model_dir


def test_the_numbers_are_the_exports_scores_counted(mismatched_run, tmp_path):
  model_dir = mismatched_run
  out = tmp_path / 'auroc.json'
  result = subprocess.run([sys.executable, str(SCRIPT), f'--json_out={out}',
                           f'tiny=run={model_dir}'], capture_output=True, text=True,
                          env=runs.environment(), timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  measured = json.loads(out.read_text())['tiny=run']  # NAME=DIR splits at the last '='.
  assert '| known test images rejected |' in result.stdout
  export_dir = os.path.join(model_dir, 'export')
  with open(os.path.join(export_dir, 'tf_ipmssl_classifier.json')) as f:
    entry = json.load(f)['foreign_score']
  assert measured['thresholds'] == pytest.approx(entry['thresholds'], abs=1e-6)
  loaded = api.load(model_dir)  # The best checkpoint, as the script loads it.
  data = loaded.data()

  def scored(images):
    return score_graph.score_images(loaded.critic, images, loaded.config.formulation)

  known = scored(data.test_images)
  assert measured['known_images'] == len(known) == 20  # 4 test images of each of 5 classes.
  thresholds = np.array([measured['thresholds'][n] for n in entry['names']])
  made = auroc_script.foreign_images(data.test_images, data.foreign_test_images,
                                     picture=auroc_script.photo())
  assert list(measured['kinds']) == list(made)
  for kind, images in made.items():
    scores = scored(images)
    for i, name in enumerate(entry['names']):
      assert measured['kinds'][kind]['auroc'][name] == pytest.approx(
          counting.auroc_by_pairs(known[:, i], scores[:, i]), abs=1e-9), (kind, name)
      assert measured['kinds'][kind]['rejected'][name] == pytest.approx(
          np.mean(scores[:, i] > thresholds[i]), abs=1e-9), (kind, name)
  # The counts above are not all ties or all one way: the scores tell images apart.
  aurocs = {a for k in made for a in measured['kinds'][k]['auroc'].values()}
  assert len(aurocs - {0.0, 0.5, 1.0}) > 1
  for name in entry['names']:
    mean = np.mean([measured['kinds'][k]['auroc'][name] for k in made])
    assert f'{mean:.3f}' in result.stdout.split('| mean AUROC of the kinds |')[1].split('\n')[0]
  assert measured['known_rejected'] == pytest.approx(
      dict(zip(entry['names'], (known > thresholds).mean(axis=0))), abs=1e-9)
