"""The "none of these classes" scores (serving/foreign_score.py, score_graph.py): the
threshold rule and AUROC against brute-force counts, the scores' ops against NumPy for every
formulation, and a trained run's export end to end: its scores against the restored critic's
heads computed in NumPy, its stated thresholds against a brute-force count on its validation
images, and bin/predict --reject on a folder of known and foreign images."""
import csv
import json
import math
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import numerics
from tests.serving import counting
from tests.training import runs
from tf_ipmssl import api
from tf_ipmssl import errors
from tf_ipmssl.data import pipelines
from tf_ipmssl.serving import foreign_score
from tf_ipmssl.serving import score_graph


@pytest.mark.parametrize('seed', range(6))
def test_threshold_is_the_smallest_value_that_the_share_passes(seed):
  rng = np.random.default_rng(seed)
  size = int(rng.integers(1, 60))
  scores = rng.normal(size=size).round(int(rng.integers(0, 3)))  # Ties at some seeds.
  for share in (0.5, 0.9, 0.95, 0.99, 1.0):
    expected = counting.threshold_by_count(list(scores), share)
    assert foreign_score.threshold(scores, share) == expected


def test_threshold_known_answers():
  assert foreign_score.threshold(np.arange(1, 21), 0.95) == 19  # 19 of 20 pass.
  assert foreign_score.threshold(np.arange(1, 101), 0.95) == 95
  assert foreign_score.threshold([3.0], 0.95) == 3.0
  assert foreign_score.threshold([2, 1], 1.0) == 2
  with pytest.raises(ValueError):
    foreign_score.threshold([], 0.95)


@pytest.mark.parametrize('seed', range(6))
def test_auroc_counts_the_pairs_ties_half(seed):
  rng = np.random.default_rng(seed)
  known = rng.normal(size=int(rng.integers(1, 40))).round(1)
  foreign = (rng.normal(size=int(rng.integers(1, 40))) + rng.uniform(-1, 2)).round(1)
  assert foreign_score.auroc(known, foreign) == pytest.approx(
      counting.auroc_by_pairs(known, foreign), abs=1e-12)


def test_auroc_known_answers():
  assert foreign_score.auroc([0, 1], [2, 3]) == 1.0
  assert foreign_score.auroc([2, 3], [0, 1]) == 0.0
  assert foreign_score.auroc([1, 1], [1, 1, 1]) == 0.5
  assert foreign_score.auroc([0, 2], [1]) == 0.5


def _numpy_scores(fake_logit, class_logits, formulation):
  """{name: [N]} of foreign_score's definitions, in float64."""
  s = class_logits.astype(np.float64)
  v = fake_logit.astype(np.float64)
  p = np.exp(s - s.max(axis=1, keepdims=True))
  p /= p.sum(axis=1, keepdims=True)
  out = {'softmax': 1 - p.max(axis=1), 'entropy': -(p * np.log(p)).sum(axis=1)}
  if formulation == 'plain':
    out['critic'] = -v
  elif formulation == 'kplus1':
    out['fake'], out['critic'] = v, v - (p * s).sum(axis=1)
  elif formulation == 'kplus1_entropy':
    out['fake'], out['critic'] = v, v - (p * np.log(p)).sum(axis=1)
  return out


def test_the_test_results_reject_strictly_past_the_threshold():
  """Known scores 1..4 and foreign 2 and 5 at threshold 2: an image at the threshold passes
  (the rule an export applies: rejected where score > threshold). AUROC by hand: of the 8
  (known, foreign) pairs the foreign image scores higher in 5 (5 against 1..4; 2 against 1)
  and ties in 1 (2 against 2): (5 + 0.5) / 8."""
  entry = {'names': ['critic'], 'thresholds': {'critic': 2.0}}
  results = foreign_score.test_results(entry, [[1.0], [2.0], [3.0], [4.0]], [[2.0], [5.0]])
  assert results == {'critic': {'auroc': 5.5 / 8, 'threshold': 2.0,
                                'rejected_known_pct': 50.0, 'rejected_foreign_pct': 50.0}}


@pytest.mark.parametrize('formulation', [None, 'plain', 'kplus1', 'kplus1_entropy'])
def test_the_scores_ops_are_their_definitions(formulation):
  rng = np.random.default_rng(3)
  class_logits = rng.normal(0, 3, [50, 7]).astype(np.float32)
  fake_logit = rng.normal(0, 2, [50]).astype(np.float32)
  got = score_graph.scores(tf.constant(fake_logit), tf.constant(class_logits),
                           formulation).numpy()
  expected = _numpy_scores(fake_logit, class_logits, formulation)
  names = foreign_score.names_for(formulation)
  assert tuple(expected) == names == {None: ('softmax', 'entropy'),
                                      'plain': ('softmax', 'entropy', 'critic')}.get(
                                          formulation, foreign_score.NAMES)
  assert got.shape == (50, len(names)) and got.dtype == np.float32
  for i, name in enumerate(names):
    np.testing.assert_allclose(got[:, i], expected[name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_the_default_is_the_critics_score_where_it_has_one():
  assert [foreign_score.default_for(f) for f in (None, 'plain', 'kplus1', 'kplus1_entropy')] == [
      'entropy', 'critic', 'critic', 'critic']


def test_a_rule_applies_its_score_and_refuses_another():
  entry = foreign_score.describe('plain', np.array([[0.1, 0.2, -1], [0.3, 0.5, 2],
                                                    [0.2, 0.1, 0]]), 'validation', 0.5)
  assert entry['thresholds'] == {'softmax': 0.2, 'entropy': 0.2, 'critic': 0.0}
  assert (entry['default'], entry['images'], entry['fitted_on']) == ('critic', 3, 'validation')
  rule = foreign_score.rule_of({'foreign_score': entry}, 'critic')
  scores = np.array([[0, 0, -0.5], [0, 0, 0.0], [0, 0, 0.75]], np.float32)
  np.testing.assert_array_equal(rule.chosen(scores), [-0.5, 0.0, 0.75])
  np.testing.assert_array_equal(rule.rejects(rule.chosen(scores)), [False, False, True])
  with pytest.raises(errors.UserError, match="no 'fake' score; it has softmax, entropy, critic"):
    foreign_score.rule_of({'foreign_score': entry}, 'fake')
  assert foreign_score.rule_of({'format': 'saved_model'}) is None
  with pytest.raises(errors.UserError, match='export the run again with bin/export'):
    foreign_score.rule_of({}, 'softmax')


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """A tiny K+1 run trained by api.train and exported (its validation split: 20 images)."""
  data_dir = runs.make_data(tmp_path_factory.mktemp('data'))
  model_dir = str(tmp_path_factory.mktemp('run') / 'model')
  result = api.train(model_dir, [runs.SSL_GIN], runs.tiny_bindings(
      data_dir, **{'build_critic.normalization': "'layer_norm_singleton_per_channel'"}))
  return model_dir, result.export_dir


def _metadata(export_dir):
  with open(os.path.join(export_dir, 'tf_ipmssl_classifier.json')) as f:
    return json.load(f)


@pytest.mark.numerics
def test_the_exports_scores_are_the_critics_and_its_thresholds_their_count(trained):
  model_dir, export_dir = trained
  loaded = api.load(model_dir)  # The best step's critic, the one exported.
  data = loaded.data()
  images = data.validation_images
  predictions = api.predict(export_dir, images)
  assert predictions.score_names == foreign_score.NAMES and predictions.score_name == 'critic'
  scores = predictions.scores
  # softmax and entropy from the export's own probabilities (float32 rounding only).
  p = predictions.probabilities.astype(np.float64)
  np.testing.assert_allclose(scores[:, 0], 1 - p.max(axis=1), rtol=0, atol=1e-6)
  np.testing.assert_allclose(scores[:, 1], -(p * np.log(p)).sum(axis=1), rtol=0, atol=1e-5)
  # fake and critic from the restored critic's heads, another computation: within float32's
  # rounding of the heads' sums (tests/numerics.py); f+ = Σ p s moves by at most
  # (1 + 2·max|s|) times the class logits' tolerance.
  x = pipelines.to_model_input(images)
  fake_logit, class_logits = (t.numpy() for t in loaded.critic(x, training=False))
  expected = _numpy_scores(fake_logit, class_logits, 'kplus1')
  v_sizes, s_sizes = numerics.head_term_sizes(loaded.critic, x)
  terms = numerics.longest_sum(loaded.critic)
  v_tol = numerics.float32_tolerance(terms, v_sizes)
  s_tol = numerics.float32_tolerance(terms, s_sizes).max(axis=1)
  assert np.all(np.abs(scores[:, 2] - expected['fake']) <= v_tol + 1e-6)
  critic_tol = v_tol + s_tol * (1 + 2 * np.abs(class_logits).max(axis=1)) + 1e-5
  assert np.all(np.abs(scores[:, 3] - expected['critic']) <= critic_tol)
  assert scores.std(axis=0).min() > 1e-6  # They depend on the image.
  # The thresholds: counted on the validation images, as the export states them.
  entry = _metadata(export_dir)['foreign_score']
  assert (entry['fitted_on'], entry['images'], entry['pass_share']) == ('validation', 20, 0.95)
  for i, name in enumerate(foreign_score.NAMES):
    assert entry['thresholds'][name] == pytest.approx(
        counting.threshold_by_count(list(scores[:, i]), 0.95), abs=1e-5), name
    # 19 of the 20 validation images pass (no ties among these floats).
    assert np.sum(scores[:, i] > entry['thresholds'][name] + 1e-5) <= 1
  # The export's own decision is its score past its threshold. (Which of the validation
  # images falls past it may differ from the count above by the one at the threshold: the
  # export's graph rounds otherwise than the critic that fixed it.)
  np.testing.assert_array_equal(predictions.none_of_these,
                                scores[:, 3] > entry['thresholds']['critic'])
  assert np.sum(predictions.none_of_these) <= math.ceil(0.05 * len(images)) + 1
  np.testing.assert_array_equal(predictions.score, scores[:, 3])  # critic, the default.


def test_bin_predict_rejects_past_the_threshold(trained, tmp_path):
  model_dir, export_dir = trained
  known = api.load(model_dir).data().test_images[:6]
  rng = np.random.default_rng(0)
  folder = tmp_path / 'mixed'
  folder.mkdir()
  images = {f'known_{i}.png': image for i, image in enumerate(known)}
  images.update({f'noise_{i}.png': rng.integers(0, 256, [28, 28, 1], dtype=np.uint8)
                 for i in range(6)})
  for name, image in images.items():
    (folder / name).write_bytes(tf.io.encode_png(image).numpy())
  entry = _metadata(export_dir)['foreign_score']
  # The scores of the same pixels through the array route (checked against the critic's
  # heads above): the CSV's score columns must be these, by file.
  names = sorted(images)
  scores = api.predict(export_dir, np.stack([images[n] for n in names])).scores
  by_array = dict(zip(names, scores))
  for score in ('softmax', 'fake'):
    out = tmp_path / f'{score}.csv'
    result = runs.run_program('predict', f'--export_dir={export_dir}', '--reject',
                              f'--score={score}', str(folder), f'--output={out}')
    assert result.returncode == 0, result.stderr
    threshold = entry['thresholds'][score]
    assert f'score: {score} (higher: less like the classes); threshold {threshold:.4g}' in (
        result.stderr)
    with open(out, newline='') as f:
      rows = list(csv.DictReader(f))
    lines = [line.split('\t') for line in result.stdout.splitlines()]
    assert [line[0] for line in lines] == [row['path'] for row in rows] and len(rows) == 12
    for line, row in zip(lines, rows):
      expected = by_array[os.path.basename(row['path'])]
      for i, name in enumerate(foreign_score.NAMES):
        assert float(row[f'score_{name}']) == pytest.approx(expected[i], rel=1e-4, abs=1e-5)
      past = float(row[f'score_{score}']) > threshold
      assert row['score'] == row[f'score_{score}'] and row['none_of_these'] == str(int(past))
      assert line[1] == ('none of these' if past else row['class_name'])
      assert float(line[3]) == pytest.approx(float(row['score']), rel=1e-3, abs=1e-4)
    rejected = sum(row['none_of_these'] == '1' for row in rows)
    assert f'{rejected} of 12 image(s) called none of these' in result.stderr
  # Without --reject every image keeps its class.
  result = runs.run_program('predict', f'--export_dir={export_dir}', str(folder))
  assert result.returncode == 0 and 'none of these' not in result.stdout
  assert all(len(line.split('\t')) == 4 for line in result.stdout.splitlines())


def test_bin_predict_refuses_a_score_the_export_lacks(trained, tmp_path):
  model_dir, export_dir = trained
  image = tmp_path / 'a.png'
  image.write_bytes(tf.io.encode_png(np.zeros([28, 28, 1], np.uint8)).numpy())
  result = runs.run_program('predict', f'--export_dir={export_dir}', '--score=nope',
                            str(image))
  assert result.returncode != 0 and 'Traceback' not in result.stderr
  assert "this export has no 'nope' score; it has softmax, entropy, fake, critic" in (
      result.stderr)
  # An export written before the scores (its metadata without them): --reject refused.
  older = tmp_path / 'older'
  shutil.copytree(export_dir, older)
  metadata = _metadata(older)
  del metadata['foreign_score']
  (older / 'tf_ipmssl_classifier.json').write_text(json.dumps(metadata))
  result = runs.run_program('predict', f'--export_dir={older}', '--reject', str(image))
  assert result.returncode != 0 and 'Traceback' not in result.stderr
  assert 'export the run again with bin/export' in result.stderr
  result = runs.run_program('predict', f'--export_dir={older}', str(image))
  assert result.returncode == 0 and len(result.stdout.split('\t')) == 3
