"""metrics.json's `foreign_test` (run_dir/reporting.py): a run on a subset of its dataset's
classes records how well its selected classifier's "none of these classes" scores flag the
test images of the other classes, equal to a computation of its own here (the selected
checkpoint restored, its scores counted pair by pair and image by image); the same numbers
without an export and after a kill once the export is in place; no key for any other run."""
import json
import os
import signal

import numpy as np
import pytest

from tests.serving import counting
from tests.training import runs
from tf_ipmssl import api
from tf_ipmssl.serving import foreign_score
from tf_ipmssl.serving import score_graph

SUBSET = {'build_ssl_data.classes': '(0, 1, 2, 3, 4)', 'build_ssl_data.num_labeled': 10,
          'build_ssl_data.validation_size': 10, 'build_ssl_data.unlabeled_size': 40,
          'build_ssl_data.foreign_share': 0.5,
          # Scores that differ between images (a tiny run's batch statistics make them equal),
          # and a best step (2) before the last (4): the selected weights are not the last.
          'build_critic.normalization': "'layer_norm_singleton_per_channel'",
          'train.learning_rate_scale': 25}
WALL_KEYS = ('wall_seconds', 'wall_split', 'wall_seconds_this_session',
             'wall_split_this_session')


def _metrics(model_dir):
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    return json.load(f)


def _without_wall_times(metrics):
  return {k: v for k, v in metrics.items() if k not in WALL_KEYS}


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  return runs.make_data(tmp_path_factory.mktemp('data'))


@pytest.fixture(scope='module')
def subset_run(tmp_path_factory, data_dir):
  """(model_dir, the CompletedProcess) of a tiny K+1 run on 5 of the 10 classes, exported."""
  model_dir = str(tmp_path_factory.mktemp('subset') / 'model')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **SUBSET))
  assert result.returncode == 0, result.stdout + result.stderr
  return model_dir, result


def _counted(model_dir, checkpoint):
  """`foreign_test` computed here from the run's `checkpoint` ('best' or 'latest')."""
  loaded = api.load(model_dir, checkpoint)
  data, formulation = loaded.data(), loaded.config.formulation

  def scored(images):
    return score_graph.score_images(loaded.critic, images, formulation)

  fitted_on = 'validation' if len(data.validation_images) else 'labeled'
  fitting = scored(data.validation_images if fitted_on == 'validation' else
                   data.labeled_images)
  known, foreign = scored(data.test_images), scored(data.foreign_test_images)
  expected = {}
  for i, name in enumerate(foreign_score.names_for(formulation)):
    cut = float(counting.threshold_by_count(fitting[:, i]))
    expected[name] = {
        'auroc': counting.auroc_by_pairs(known[:, i], foreign[:, i]), 'threshold': cut,
        'rejected_known_pct': 100 * sum(int(s > cut) for s in known[:, i]) / len(known),
        'rejected_foreign_pct': 100 * sum(int(s > cut) for s in foreign[:, i]) / len(foreign)}
  return {'known_images': len(known), 'foreign_images': len(foreign),
          'default': foreign_score.default_for(formulation), 'fitted_on': fitted_on,
          'pass_share': 0.95}, expected


def _assert_counted(measured, model_dir, checkpoint):
  header, expected = _counted(model_dir, checkpoint)
  assert {k: measured[k] for k in header} == header
  assert list(measured['scores']) == list(expected)
  for name, numbers in expected.items():
    got = measured['scores'][name]
    assert set(got) == set(numbers), name
    for key, value in numbers.items():
      assert isinstance(got[key], float), (name, key)
      # The scores of another process: a threshold equal within float32 rounding (a step
      # of training moves it more), the counted numbers exactly.
      tolerance = 1e-7 if key == 'threshold' else 1e-12
      assert got[key] == pytest.approx(value, rel=tolerance, abs=tolerance), (name, key)


def test_metrics_carry_the_selected_classifiers_foreign_test_as_counted(subset_run):
  model_dir, result = subset_run
  metrics = _metrics(model_dir)
  measured = metrics['foreign_test']
  assert measured['checkpoint'] == 'best' and metrics['exported']['checkpoint'] == 'best'
  assert measured['step'] == metrics['best']['step'] == metrics['exported']['step'] == 2
  assert len({s['auroc'] for s in measured['scores'].values()} - {0.5}) > 1  # Not all tied.
  assert measured['known_images'] == 20 and measured['foreign_images'] == 20  # 4 per class.
  assert measured['default'] == 'critic'
  assert list(measured['scores']) == ['softmax', 'entropy', 'fake', 'critic']
  _assert_counted(measured, model_dir, 'best')
  # The thresholds are the export's, from the same weights in the same process.
  with open(os.path.join(model_dir, 'export', 'tf_ipmssl_classifier.json')) as f:
    entry = json.load(f)['foreign_score']
  assert {n: s['threshold'] for n, s in measured['scores'].items()} == entry['thresholds']
  critic = measured['scores']['critic']
  assert (f'. Test images of the other classes: AUROC {critic["auroc"]:.3f} by the critic '
          f'score, {critic["rejected_foreign_pct"]:.0f}% of them rejected at its threshold '
          f'(known test images {critic["rejected_known_pct"]:.0f}%)') in result.stdout
  with open(os.path.join(model_dir, 'export', 'MODEL_CARD.md')) as f:
    card = f.read()
  assert (f"- Test images of the dataset's other classes (20): AUROC {critic['auroc']:.3f} "
          'against the 20 test images of its classes by the default score (critic)') in card


def test_a_run_killed_after_its_export_ends_with_the_same_metrics(subset_run, data_dir,
                                                                   tmp_path):
  reference, _ = subset_run
  model_dir = str(tmp_path / 'model')
  bindings = runs.tiny_bindings(data_dir, **SUBSET)
  killed = runs.run_train(model_dir, bindings, fault='export_renamed=kill')
  assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
  assert 'foreign_test' not in _metrics(model_dir)
  result = runs.run_train(model_dir, bindings)
  assert result.returncode == 0, result.stdout + result.stderr
  assert 'exporting again' in result.stdout
  metrics = _metrics(model_dir)
  assert _without_wall_times(metrics) == _without_wall_times(_metrics(reference))
  # A finished run only reports, the measurement included.
  again = runs.run_train(model_dir, bindings)
  assert again.returncode == 0, again.stdout + again.stderr
  assert 'nothing to do' in again.stdout
  assert 'Test images of the other classes: AUROC' in again.stdout
  assert _metrics(model_dir) == metrics


def test_without_an_export_the_selected_weights_are_measured(subset_run, data_dir,
                                                              tmp_path):
  reference, _ = subset_run
  model_dir = str(tmp_path / 'model')
  result = runs.run_train(model_dir, runs.tiny_bindings(
      data_dir, **SUBSET, **{'train.export_classifier': False}))
  assert result.returncode == 0, result.stdout + result.stderr
  metrics = _metrics(model_dir)
  assert metrics['exported'] is None and not os.path.exists(os.path.join(model_dir, 'export'))
  assert metrics['foreign_test'] == _metrics(reference)['foreign_test']
  assert metrics['foreign_test']['step'] == metrics['best']['step'] == 2  # Not the last step.


def test_without_a_validation_split_the_last_step_on_labeled_thresholds(data_dir, tmp_path):
  model_dir = str(tmp_path / 'model')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{
      **SUBSET, 'build_ssl_data.validation_size': 0, 'train.export_classifier': False}))
  assert result.returncode == 0, result.stdout + result.stderr
  measured = _metrics(model_dir)['foreign_test']
  assert measured['checkpoint'] == 'latest' and measured['step'] == 4
  assert measured['fitted_on'] == 'labeled'
  _assert_counted(measured, model_dir, 'latest')


def test_a_supervised_run_measures_its_own_scores_at_a_rounded_threshold(data_dir, tmp_path):
  """The supervised critic on the class subset (the user_data study's score_vs_softmax reads
  such a record): its two scores, entropy the default, as counted; 20 validation images, so
  that the 95% threshold is the 19th smallest score, not the largest."""
  model_dir = str(tmp_path / 'model')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{
      **SUBSET, 'train.mode': "'supervised'", 'build_ssl_data.validation_size': 20,
      'train.export_classifier': False}),
      gin_files=(str(runs.REPO_ROOT / 'gin' / 'bases' / 'supervised.gin'),))
  assert result.returncode == 0, result.stdout + result.stderr
  measured = _metrics(model_dir)['foreign_test']
  assert list(measured['scores']) == ['softmax', 'entropy']
  assert measured['default'] == 'entropy'
  _assert_counted(measured, model_dir, measured['checkpoint'])
  assert any(0 < s['rejected_foreign_pct'] < 100 or 0 < s['rejected_known_pct'] < 100
             for s in measured['scores'].values())


@pytest.mark.integration  # A run killed and resumed: out of the default command for its time.
def test_a_run_killed_in_training_measures_the_best_step_restored_in_a_new_session(
    subset_run, data_dir, tmp_path):
  reference, _ = subset_run
  model_dir = str(tmp_path / 'model')
  bindings = runs.tiny_bindings(data_dir, **SUBSET)
  killed = runs.run_train(model_dir, bindings, fault='checkpoint_written#1=kill')
  assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
  result = runs.run_train(model_dir, bindings)
  assert result.returncode == 0, result.stdout + result.stderr
  measured = _metrics(model_dir)['foreign_test']
  assert measured['step'] == 2 and measured['checkpoint'] == 'best'
  _assert_counted(measured, model_dir, 'best')
  assert measured == _metrics(reference)['foreign_test']


def test_a_run_on_all_its_classes_has_no_foreign_test(tmp_path_factory):
  _, model_dir, result = runs.shared_run(tmp_path_factory)
  assert 'foreign_test' not in _metrics(model_dir)
  assert 'other classes' not in result.stdout
  with open(os.path.join(model_dir, 'export', 'MODEL_CARD.md')) as f:
    assert 'other classes' not in f.read()
