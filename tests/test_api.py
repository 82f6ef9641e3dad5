"""The Python API (tf_ipmssl/api.py), in this process: README's example as written, a round
trip train -> evaluate -> export -> load -> predict whose numbers are checked against
metrics.json and against the classifier computed independently, user errors, and gin
bindings that stay with their call."""
import json
import os
import random
import re
import subprocess
import sys

import gin
import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import fixtures
from tests import numerics
from tests.training import runs
import tf_ipmssl
from tf_ipmssl import api
from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import pipelines
from tf_ipmssl.run_dir import reporting
from tf_ipmssl.serving import prediction
from tf_ipmssl.training import precision

README = runs.REPO_ROOT / 'README.md'


def readme_example():
  """The first python block of README's "Python API" section."""
  section = README.read_text().split('\n## Python API\n', 1)[1].split('\n## ', 1)[0]
  return re.search(r'```python\n(.*?)```', section, re.DOTALL).group(1)


@pytest.mark.integration  # Two whole runs and two exports, as README's block has them.
def test_readme_example_runs_as_written(tmp_path, monkeypatch):
  """The block, run from a directory with the checkout's gin/, on a stand-in Fashion-MNIST
  found through $TF_IPMSSL_DATA_DIR (the real one where the README runs)."""
  data_dir = tmp_path / 'data'
  fixtures.make_fake_dataset(str(data_dir), 'fashion_mnist', num_train=1000, num_test=200)
  monkeypatch.setenv('TF_IPMSSL_DATA_DIR', str(data_dir))
  (tmp_path / 'gin').symlink_to(runs.REPO_ROOT / 'gin')
  monkeypatch.chdir(tmp_path)
  namespace = {}
  exec(readme_example(), namespace)  # pylint: disable=exec-used
  result, data, predictions = (namespace[k] for k in ('result', 'data', 'predictions'))
  assert str(data_dir) in data.source
  assert result.steps == 20 and result.export_dir == os.path.join('runs/notebook', 'export')
  assert result.metrics == json.loads((tmp_path / 'runs/notebook/metrics.json').read_text())
  assert predictions.labels.shape == (8,) and predictions.probabilities.shape == (8, 10)
  # The labels are the most probable classes, and the probabilities those of the export's
  # serving signature itself on the same images (the first 8 test images, as in the README).
  np.testing.assert_array_equal(predictions.labels, predictions.probabilities.argmax(axis=1))
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  served = tf.saved_model.load(result.export_dir).signatures['serving_default'](
      images=tf.constant(data.test_images[:8]))
  np.testing.assert_allclose(predictions.probabilities, served['probabilities'].numpy(),
                             rtol=0, atol=1e-6)
  assert (tmp_path / 'runs/notebook/export_latest/saved_model.pb').is_file()
  assert gin.config_str() == ''


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """A tiny run trained by api.train (evaluated at steps 2 and 4, exported)."""
  data_dir = runs.make_data(tmp_path_factory.mktemp('data'))
  model_dir = str(tmp_path_factory.mktemp('run') / 'model')
  result = api.train(model_dir, [runs.SSL_GIN], runs.tiny_bindings(data_dir))
  return data_dir, model_dir, result


def _metrics(model_dir):
  return json.loads(open(os.path.join(model_dir, 'metrics.json')).read())


def test_train_returns_what_metrics_json_records(trained):
  _, model_dir, result = trained
  metrics = _metrics(model_dir)
  assert result.metrics == metrics and metrics['finished'] and result.steps == 4
  assert result.best_step == metrics['best']['step'] in (2, 4)
  assert result.test_error == metrics['best']['test_error']
  assert result.validation_error == metrics['best']['validation_error']
  assert result.last_test_error == metrics['final']['test_error']
  assert result.export_dir == os.path.join(model_dir, 'export')
  assert metrics['exported'] == {'checkpoint': 'best', 'step': result.best_step}
  assert gin.config_str() == ''  # The call's bindings left with it.
  # A finished run only reports, as bin/train does.
  again = api.train(model_dir, [runs.SSL_GIN], runs.tiny_bindings(trained[0]))
  assert again == result


def test_evaluate_recomputes_the_recorded_errors(trained):
  _, model_dir, result = trained
  metrics = _metrics(model_dir)
  best = api.evaluate(model_dir)  # The best checkpoint, as load and export default to.
  assert best == api.Evaluation(
      source=os.path.join(model_dir, 'best', f'ckpt-{result.best_step}'), split='test',
      examples=40, error=metrics['best']['test_error'],
      class_errors=metrics['best']['test_class_errors'],
      balanced_error=metrics['best']['test_balanced_error'],
      confusion=metrics['best']['test_confusion'])
  latest = api.evaluate(model_dir, checkpoint='latest', split='validation')
  assert latest.source.endswith('ckpt-4') and latest.examples == 20
  assert latest.error == metrics['final']['validation_error']
  exported = api.evaluate(model_dir, export_dir=result.export_dir)
  # The same classifier, the same count, the same division (reporting.percent): equal.
  assert exported.source == result.export_dir
  assert exported.error == best.error
  assert exported.confusion == best.confusion
  assert list(best.class_errors) == metrics['class_names']
  # Counted here: the export's labels on the test images (the predict test below checks
  # them against the critic) against the true labels.
  data = api.load(model_dir).data()
  predicted = api.predict(result.export_dir, data.test_images).labels
  k = len(metrics['class_names'])
  confusion = np.zeros([k, k], np.int64)
  for true, label in zip(data.test_labels, predicted):
    confusion[true, label] += 1
  assert best.confusion == confusion.tolist()
  per_class = {name: (None if not confusion[c].sum() else
                      100.0 * (confusion[c].sum() - confusion[c, c]) / confusion[c].sum())
               for c, name in enumerate(metrics['class_names'])}
  assert best.class_errors.keys() == per_class.keys()
  for name, error in per_class.items():
    assert (best.class_errors[name] is None) if error is None else (
        best.class_errors[name] == pytest.approx(error, abs=1e-9)), name
  present = [e for e in per_class.values() if e is not None]
  assert best.balanced_error == pytest.approx(sum(present) / len(present), abs=1e-9)
  assert best.error == pytest.approx(
      100.0 * np.sum(predicted != data.test_labels) / len(predicted), abs=1e-12)
  lines = best.text().splitlines()
  assert len(lines) == 11 and lines[1].split()[0] == metrics['class_names'][0]


@pytest.mark.numerics
def test_predict_on_arrays_is_the_classifier_computed_independently(trained):
  data_dir, model_dir, result = trained
  loaded = api.load(model_dir)
  data = loaded.data()
  images = data.test_images
  predictions = api.predict(result.export_dir, images)
  # The SavedModel's own signature, called here on the same batch (all the images, one of
  # predict's batches): the same computation, equal bit for bit.
  assert len(images) <= prediction.BATCH
  served = tf.saved_model.load(result.export_dir).signatures['serving_default'](
      images=tf.constant(images))
  np.testing.assert_array_equal(predictions.labels, served['labels'].numpy())
  np.testing.assert_array_equal(predictions.probabilities, served['probabilities'].numpy())
  # The restored critic of the best step, in memory: argmax_y S(Φ(x)), eager, another
  # computation: within float32's rounding of its sums (tests/numerics.py).
  x = pipelines.to_model_input(images)
  expected = tf.nn.softmax(loaded.critic.classify(x, training=False)).numpy()
  tolerance = numerics.probability_tolerance(loaded.critic, x)
  np.testing.assert_allclose(predictions.probabilities, expected, rtol=0, atol=tolerance)
  numerics.assert_labels_agree_where_clear(predictions.labels, expected, tolerance)
  assert predictions.class_names == tuple(dataset_specs.FASHION_MNIST.class_names)
  assert predictions.label_names == tuple(predictions.class_names[y] for y in predictions.labels)
  # Its errors are the run's: the best step's test error of metrics.json.
  mistakes = int(np.sum(predictions.labels != data.test_labels))
  assert reporting.percent(mistakes, len(images)) == result.test_error
  assert data_dir in data.source


@pytest.mark.numerics
def test_predict_on_files_as_bin_predict_does(trained, tmp_path):
  _, model_dir, result = trained
  images = api.load(model_dir).data().test_images[:5]
  folder = tmp_path / 'images'
  (folder / 'more').mkdir(parents=True)
  for i, image in enumerate(images):
    (folder / ('more' if i % 2 else '') / f'{i}.png').write_bytes(
        tf.io.encode_png(image).numpy())
  (folder / 'broken.png').write_text('not an image')
  single = str(folder / '0.png')
  predictions = api.predict(result.export_dir, [single, str(folder / 'more')])
  on_arrays = api.predict(result.export_dir, images)
  assert predictions.paths == (single, str(folder / 'more' / '1.png'),
                               str(folder / 'more' / '3.png'))
  # A batch of 3 against one of 5: kernels sum in other orders for other batch shapes (oneDNN
  # differed by 7.5e-9 here), so within float32's rounding of the classifier's sums.
  loaded = api.load(model_dir)
  tolerance = numerics.probability_tolerance(loaded.critic, pipelines.to_model_input(images))
  expected = on_arrays.probabilities[[0, 1, 3]]
  np.testing.assert_allclose(predictions.probabilities, expected, rtol=0, atol=tolerance)
  numerics.assert_labels_agree_where_clear(predictions.labels, expected, tolerance)
  everything = api.predict(result.export_dir, folder)
  assert len(everything.paths) == 5 and everything.label_names[0] in everything.class_names
  assert [path for path, _ in everything.skipped] == [str(folder / 'broken.png')]
  assert 'not a readable' in everything.skipped[0][1]


def test_export_and_load_a_checkpoint(trained, tmp_path):
  _, model_dir, _ = trained
  export_dir = str(tmp_path / 'latest')
  exported = api.export(model_dir, export_dir, checkpoint='latest')
  assert exported == api.ExportedClassifier(
      export_dir, os.path.join(model_dir, 'checkpoints', 'ckpt-4'))
  latest = api.evaluate(model_dir, checkpoint='latest').error
  assert latest == _metrics(model_dir)['final']['test_error']
  assert api.evaluate(model_dir, export_dir=export_dir).error == latest
  loaded = api.load(model_dir, checkpoint='latest', weights='trained')
  assert loaded.checkpoint == exported.checkpoint and loaded.critic is loaded.run.critic
  assert loaded.config.mode == 'ssl' and loaded.config.train.steps == 4
  assert loaded.dataset['name'] == 'fashion_mnist' and loaded.metrics == _metrics(model_dir)


def test_a_bad_binding_raises_the_library_error_in_one_line(trained, tmp_path):
  data_dir, _, _ = trained
  model_dir = tmp_path / 'm'
  tiny = runs.tiny_bindings(data_dir)
  with pytest.raises(errors.ConfigError) as raised:
    api.train(model_dir, [runs.SSL_GIN], tiny + ['train.stepz = 3'])
  assert str(raised.value) == ("unknown train binding(s) ['stepz'] (did you mean train.steps?);"
                               ' the train settings are documented in '
                               'tf_ipmssl/training/run_config.py')
  # Raised inside gin's call of a configurable: the library's own class, its message alone.
  with pytest.raises(errors.ConfigError) as raised:
    api.train(model_dir, [runs.SSL_GIN], tiny + ["Fisher.component = 'g'"])
  assert type(raised.value) is errors.ConfigError
  assert str(raised.value).startswith("unknown critic component 'g'; use one of")
  assert '\n' not in str(raised.value)
  with pytest.raises(errors.ConfigError, match='gin file nowhere.gin does not exist'):
    api.train(model_dir, 'nowhere.gin')
  assert not model_dir.exists() and gin.config_str() == ''


def test_bindings_stay_with_their_call(trained, tmp_path):
  """A call sees its own bindings only: not the previous call's (which bound the dataset),
  nor those the process parsed before it, which are there again after it."""
  data_dir, _, _ = trained
  gin.parse_config(["build_ssl_data.dataset = 'fashion_mnist'"])
  before = gin.config_str()
  without_dataset = [b for b in runs.tiny_bindings(data_dir)
                     if not b.startswith('build_ssl_data.dataset')]
  try:
    with pytest.raises(errors.ConfigError, match='bind build_ssl_data.dataset'):
      api.train(tmp_path / 'm', runs.SSL_GIN, without_dataset)
    assert gin.config_str() == before
  finally:
    gin.clear_config()
  assert not (tmp_path / 'm').exists()


def _process_state():
  """What the API's calls leave as they found it (process_state.py, configurables.isolated)."""
  return (keras.mixed_precision.global_policy().name,
          tf.config.optimizer.get_experimental_options(), precision.memory_optimization(),
          gin.config_str(),
          gin.config_is_locked(), random.getstate(), np.random.get_state()[1].tobytes())


def test_every_call_leaves_the_process_as_it_found_it(trained, tmp_path):
  """Each call of the API, from a process whose dtype policy, Grappler options, gin
  configuration and random states are not the defaults, leaves them as they were: train sets
  the run's float32 policy, seeds and Grappler's arithmetic and memory optimizers; load,
  evaluate and export fix the summation order; configuration and train empty gin for their
  call."""
  data_dir, model_dir, _ = trained
  tiny = runs.tiny_bindings(data_dir)
  keras.mixed_precision.set_global_policy('mixed_float16')
  tf.config.optimizer.set_experimental_options({'constant_folding': False})
  gin.parse_config(['build_critic.width = 3.0', "Fisher.component = 'f_neg'"])
  random.seed(123)
  np.random.seed(456)
  try:
    calls = {
        'configuration': lambda: api.configuration(runs.SSL_GIN, tiny),
        'train': lambda: api.train(tmp_path / 'other', runs.SSL_GIN,
                                   tiny + ['train.seed = 1']),
        'load': lambda: api.load(model_dir),
        'evaluate': lambda: api.evaluate(model_dir, split='validation'),
        'export': lambda: api.export(model_dir, tmp_path / 'export', checkpoint='latest'),
        'evaluate the load': lambda: api.load(model_dir).evaluate(),
    }
    for name, call in calls.items():
      before = _process_state()
      call()
      assert _process_state() == before, name
    assert before[0] == 'mixed_float16' and before[1]['constant_folding'] is False
    assert 'arithmetic_optimization' not in before[1]
    assert before[2] == precision.DEFAULT_MEMORY_OPTIMIZATION
    assert 'build_critic.width = 3.0' in before[3]
  finally:
    keras.mixed_precision.set_global_policy('float32')
    tf.config.optimizer.set_experimental_options({'constant_folding': None})
    gin.clear_config()


def test_train_from_a_configuration_object(trained, tmp_path):
  """The fixture's run trained again from api.configuration of its gin files and bindings,
  in this process: the same configuration, the same computation, so the same metrics; its
  config.gin parses back to the same configuration."""
  data_dir, model_dir, result = trained
  config = api.configuration(runs.SSL_GIN, runs.tiny_bindings(data_dir))
  again = api.train(tmp_path / 'again', config=config)
  recorded = json.loads(open(os.path.join(model_dir, 'run_config.json')).read())
  assert json.loads((tmp_path / 'again' / 'run_config.json').read_text()) == recorded
  assert again.metrics['best'] == result.metrics['best']
  assert again.metrics['final'] == result.metrics['final']
  text = (tmp_path / 'again' / 'config.gin').read_text()
  assert text == (tmp_path / 'again' / 'operative_config.gin').read_text()
  assert api.configuration(gin_bindings=text.splitlines()) == config
  assert gin.config_str() == ''
  with pytest.raises(errors.ConfigError, match='not both'):
    api.train(tmp_path / 'both', runs.SSL_GIN, config=config)
  with pytest.raises(errors.ConfigError, match='must be a RunConfig'):
    api.train(tmp_path / 'dict', config=config.to_json())
  with pytest.raises(errors.ConfigError, match='build_critic.width'):
    config.replaced({'build_critic.width': 0})
  assert not (tmp_path / 'both').exists() and not (tmp_path / 'dict').exists()


def test_importing_the_api_sets_no_environment_and_no_program_module():
  code = ('import os, sys; before = dict(os.environ); import tf_ipmssl.api; '
          'print("tf_ipmssl.command_line" in sys.modules, dict(os.environ) == before)')
  environment = {k: v for k, v in runs.environment().items()
                 if k not in ('TF_ENABLE_ONEDNN_OPTS', 'TF_CPP_MIN_LOG_LEVEL')}
  out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                       check=True, env=environment, cwd=str(runs.REPO_ROOT)).stdout
  assert out.split() == ['False', 'True']


def test_import_tf_ipmssl_does_not_import_tensorflow():
  code = ('import sys, tf_ipmssl; print(tf_ipmssl.__version__, "tensorflow" in sys.modules, '
          '"train" in dir(tf_ipmssl))')
  out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                       check=True, env=runs.environment(), cwd=str(runs.REPO_ROOT)).stdout
  assert out.split() == [tf_ipmssl.__version__, 'False', 'True']
  assert tf_ipmssl.train is api.train and tf_ipmssl.predict is api.predict
  with pytest.raises(AttributeError):
    tf_ipmssl.no_such_function  # pylint: disable=pointless-statement


def test_the_model_card_says_what_the_run_measured(trained, tmp_path):
  """Beside every export, MODEL_CARD.md: the classes by label, the input, the data's counts,
  the exported step's errors as metrics.json records them, and the commands."""
  _, model_dir, result = trained
  metrics = _metrics(model_dir)
  with open(os.path.join(model_dir, 'dataset.json')) as f:
    counts = json.load(f)['counts']
  exported = api.export(model_dir, tmp_path / 'again', formats='saved_model')
  for directory in (result.export_dir, exported.export_dir):
    with open(os.path.join(directory, 'MODEL_CARD.md')) as f:
      card = f.read()
    assert '0 T-shirt/top, 1 Trouser,' in card and 'uint8 [N, 28, 28, 1]' in card
    assert (f'- Test error: {metrics["best"]["test_error"]:.2f}% of {sum(counts["test"])} test '
            f'images, at the best validation step {metrics["best"]["step"]} (validation error '
            f'{metrics["best"]["validation_error"]:.2f}% of {sum(counts["validation"])} '
            'images)') in card
    assert f'labeled {sum(counts["labeled"])} (' in card and 'default critic' in card
  assert '- Exported by: `' in card and '- Trained by: `' in card
