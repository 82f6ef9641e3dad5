"""The ONNX and LiteRT exports answer as the SavedModel does, served by their own runtimes.

Three tiny runs (bin/train, a few steps; the critic with layer norm, whose outputs depend on
the image even untrained, where a tiny critic without normalization answers nearly the same
for every image): a 32-px CIFAR-10-shaped run, a Fashion-MNIST-shaped run (28x28x1, padded to
32x32 in the graph) and a 64-px image-folder run (images of any size, resized in the graph).
Each is exported once by bin/export in every format; a subprocess that never imports
TensorFlow serves the ONNX and LiteRT exports with onnxruntime and the LiteRT interpreter on
the same images, and its labels and probabilities are compared with the SavedModel's.

Tolerance: the three runtimes compute the same float32 graph with other kernels and
summation orders. Each logit is a sum of a few thousand float32 products through ten layers,
so its rounding differs by a few units of float32's 1.2e-7 relative precision per layer:
about 1e-6 of the logits' size (well under 1); a softmax probability (in [0, 1], whose
derivative in a logit is at most 1/4) then moves by less than 1e-6, and 1e-5 leaves a tenfold
margin. Images of another size than the model's are resized in the ONNX and LiteRT graphs by
matrix products (portable_graph.fit_images): summed in another order than TensorFlow's
resize kernel, a few resized pixels in a thousand round to the neighbouring uint8 value
(1/127.5 at the network's input), so those images are compared at 1e-3, and their labels
where the SavedModel's top two probabilities are more than 1e-3 apart.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import fixtures
from tests.serving import counting
from tests.training import runs
from tf_ipmssl.data import image_rules
from tf_ipmssl.serving import portable_graph
from tf_ipmssl.serving import runtimes

FORMATS = ('onnx', 'litert', 'litert_int8')
KEYS = ('probabilities', 'labels', 'scores')
ATOL, RESIZED_ATOL = 1e-5, 1e-3

_SERVE_SCRIPT = """
import json, sys
import numpy as np
from tf_ipmssl.serving import runtimes
export_dirs, inputs, output = json.loads(sys.argv[1]), np.load(sys.argv[2]), sys.argv[3]
answers = {}
for name, export_dir in export_dirs.items():
  classifier = runtimes.open_classifier(export_dir)
  for batch in inputs.files:
    out = classifier(inputs[batch])
    answers[f'{name}/{batch}/probabilities'] = out['probabilities']
    answers[f'{name}/{batch}/labels'] = out['labels']
    answers[f'{name}/{batch}/scores'] = out['scores']
np.savez(output, **answers)
assert 'tensorflow' not in sys.modules, sorted(m for m in sys.modules if 'tensorflow' in m)
print('served without tensorflow')
"""


def _layer_norm(data_dir, dataset='fashion_mnist', **overrides):
  return runs.tiny_bindings(data_dir, dataset, **{
      'build_critic.normalization': "'layer_norm_singleton_per_channel'",
      'train.steps': 6, **overrides})


def _folder(root):
  """A colour image folder of two classes, images of many sizes, no validation/."""
  rng = np.random.default_rng(0)
  for name, value in (('dark', 60), ('light', 190)):
    for i in range(6):
      height, width = rng.integers(20, 90, 2)
      image = np.clip(rng.normal(value, 40, [height, width, 3]), 0, 255).astype(np.uint8)
      path = root / 'labeled' / name / f'{i}.png'
      path.parent.mkdir(parents=True, exist_ok=True)
      tf.io.write_file(str(path), tf.io.encode_png(image))
  (root / 'unlabeled').mkdir()
  return root


def _images(name):
  """Batches of uint8 images for a run (name -> array): its own size, and for the folder run
  other sizes too."""
  rng = np.random.default_rng(11)
  if name == 'cifar32':
    return {'native': fixtures.fake_images_and_labels('cifar10', 40, seed=4)[0]}
  if name == 'fashion':
    return {'native': fixtures.fake_images_and_labels('fashion_mnist', 40, seed=4)[0]}
  batches = {'native': rng.integers(0, 256, [8, 64, 64, 3], dtype=np.uint8)}
  for height, width in ((45, 70), (90, 41), (20, 33), (128, 96)):
    batches[f'{height}x{width}'] = rng.integers(0, 256, [6, height, width, 3], dtype=np.uint8)
  return batches


@pytest.fixture(scope='module', params=['cifar32', 'fashion', 'folder64'])
def exported(request, tmp_path_factory):
  """(name, {format: export dir}, image batches) of one tiny run exported in every format."""
  name = request.param
  directory = tmp_path_factory.mktemp(name)
  if name == 'folder64':
    bindings = _layer_norm(_folder(directory / 'images'), 'image_folder', **{
        'build_ssl_data.num_labeled': None, 'build_ssl_data.validation_size': 0,
        'build_ssl_data.source': "'auto'", 'build_ssl_data.image_size': 64,
        'train.batch_size': 8, 'train.steps': 2})
  else:
    dataset = 'cifar10' if name == 'cifar32' else 'fashion_mnist'
    bindings = _layer_norm(runs.make_data(directory / 'data', dataset), dataset)
  model_dir = str(directory / 'run')
  result = runs.run_train(model_dir, bindings + ['train.export_classifier = False'])
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]
  base = str(directory / 'export')
  result = runs.run_program('export', f'--model_dir={model_dir}', '--checkpoint=latest',
                            f'--export_dir={base}', '--format=saved_model,onnx',
                            '--format=litert', '--format=litert_int8', timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  directories = {'saved_model': base, **{f: f'{base}_{f}' for f in FORMATS}}
  assert result.stdout.splitlines() == [
      f'Exported the classifier of {model_dir}/checkpoints/ckpt-'
      f'{6 if name != "folder64" else 2} as {f} to {d}' for f, d in directories.items()]
  return name, directories, _images(name)


@pytest.fixture(scope='module')
def served(exported, tmp_path_factory):
  """The SavedModel's answers (here) and the other formats' (in a process without
  TensorFlow): {format: {batch: (probabilities, labels)}}."""
  _, directories, batches = exported
  directory = tmp_path_factory.mktemp('served')
  np.savez(directory / 'inputs.npz', **batches)
  others = {f: directories[f] for f in FORMATS}
  result = subprocess.run(
      [sys.executable, '-c', _SERVE_SCRIPT, json.dumps(others), str(directory / 'inputs.npz'),
       str(directory / 'answers.npz')], capture_output=True, text=True,
      env=runs.environment(), timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'served without tensorflow' in result.stdout
  answers = np.load(directory / 'answers.npz')
  out = {f: {b: tuple(answers[f'{f}/{b}/{k}'] for k in KEYS) for b in batches}
         for f in FORMATS}
  saved_model = runtimes.open_classifier(directories['saved_model'])
  out['saved_model'] = {b: tuple(saved_model(images)[k] for k in KEYS)
                        for b, images in batches.items()}
  return out


@pytest.mark.numerics
@pytest.mark.parametrize('fmt', ['onnx', 'litert'])
def test_the_runtime_answers_as_the_saved_model(exported, served, fmt):
  name, _, batches = exported
  for batch in batches:
    expected, expected_labels, _ = served['saved_model'][batch]
    probabilities, labels, _ = served[fmt][batch]
    assert probabilities.shape == expected.shape and probabilities.dtype == np.float32
    resized = name == 'folder64' and batch != 'native'
    np.testing.assert_allclose(probabilities, expected, rtol=0,
                               atol=RESIZED_ATOL if resized else ATOL, err_msg=batch)
    top_two = np.sort(expected, axis=-1)[:, -2:]
    clear = (top_two[:, 1] - top_two[:, 0] > RESIZED_ATOL) if resized else slice(None)
    np.testing.assert_array_equal(labels[clear], expected_labels[clear], err_msg=batch)


def test_the_runs_answers_depend_on_the_image(exported, served):
  """The comparisons above would hold for a classifier that ignored its input: this one
  does not."""
  _, _, batches = exported
  probabilities, _, scores = served['saved_model']['native']
  assert probabilities.std(axis=0).max() > 1e-4
  assert (scores.std(axis=0) > 1e-6).all()


@pytest.mark.numerics
def test_int8_weights_mostly_keep_the_labels(exported, served):
  _, _, batches = exported
  agree = [served['litert_int8'][b][1] == served['saved_model'][b][1] for b in batches]
  assert np.mean(np.concatenate(agree)) >= 0.8
  for batch in batches:
    np.testing.assert_allclose(served['litert_int8'][batch][0],
                               served['saved_model'][batch][0], atol=0.05)


def test_the_metadata_names_the_classes_size_and_rule(exported):
  import onnx  # pylint: disable=g-import-not-at-top
  name, directories, _ = exported
  shape = {'cifar32': [32, 32, 3], 'fashion': [28, 28, 1], 'folder64': [64, 64, 3]}[name]
  rule = image_rules.resize_rule(64) if name == 'folder64' else None
  for fmt, directory in directories.items():
    classifier = runtimes.open_classifier(directory) if fmt != 'saved_model' else None
    with open(os.path.join(directory, 'tf_ipmssl_classifier.json')) as f:
      metadata = json.load(f)
    assert (metadata['format'], metadata['image_shape'], metadata['resize']) == (fmt, shape,
                                                                                 rule)
    assert metadata['input_dtype'] == 'uint8' and len(metadata['class_names']) == (
        2 if name == 'folder64' else 10)
    if classifier:
      assert classifier.input_shape == ((None, None, 3) if rule else tuple(shape))
      assert list(classifier.class_names) == metadata['class_names']
  model = onnx.load(os.path.join(directories['onnx'], 'model.onnx'))
  props = {p.key: json.loads(p.value) for p in model.metadata_props}
  assert props['class_names'] == metadata['class_names'] and props['image_shape'] == shape
  assert props['resize'] == rule
  sizes = {f: os.path.getsize(os.path.join(directories[f], 'model.tflite'))
           for f in ('litert', 'litert_int8')}
  assert sizes['litert_int8'] < sizes['litert']


def test_the_portable_resize_is_the_training_rule():
  """portable_graph.fit_images against image_rules.fit_images (the SavedModel's and the
  training's): identical at the model's size, else at most one uint8 level apart on under 1%
  of the pixels."""
  rng = np.random.default_rng(3)
  for height, width in ((64, 64), (45, 70), (90, 41), (20, 33), (300, 200), (64, 65)):
    images = rng.integers(0, 256, [2, height, width, 3], dtype=np.uint8)
    expected = image_rules.fit_images(images, 64).numpy().astype(int)
    actual = portable_graph.fit_images(tf.constant(images), 64).numpy().astype(int)
    assert actual.shape == expected.shape == (2, 64, 64, 3)
    difference = np.abs(actual - expected)
    assert difference.max() <= 1 and np.mean(difference > 0) < 0.01, (height, width)
    if (height, width) == (64, 64):
      np.testing.assert_array_equal(actual, images)


def _png_files(name, directory):
  """Image files for bin/predict: the run's own size, and for the folder run other sizes."""
  rng = np.random.default_rng(5)
  shapes = {'cifar32': [(32, 32, 3)] * 3, 'fashion': [(28, 28, 1)] * 3,
            'folder64': [(64, 64, 3), (45, 70, 3), (90, 41, 3)]}[name]
  paths = []
  for i, shape in enumerate(shapes):
    paths.append(str(directory / f'{i}.png'))
    tf.io.write_file(paths[-1], tf.io.encode_png(rng.integers(0, 256, shape, dtype=np.uint8)))
  return paths


@pytest.mark.numerics
def test_bin_predict_and_the_api_serve_every_format(exported, tmp_path):
  """bin/predict and tf_ipmssl.predict take any format's directory: the same classes, and
  probabilities within the tolerances above, as the SavedModel's."""
  import csv  # pylint: disable=g-import-not-at-top
  import tf_ipmssl  # pylint: disable=g-import-not-at-top
  name, directories, batches = exported
  paths = _png_files(name, tmp_path)
  expected = runtimes.open_classifier(directories['saved_model'])(batches['native'])['labels']
  rows = {}
  for fmt in ('saved_model', 'onnx', 'litert'):
    output = tmp_path / f'{fmt}.csv'
    result = runs.run_program('predict', f'--export_dir={directories[fmt]}', *paths,
                              f'--output={output}')
    assert result.returncode == 0, result.stderr[-3000:]
    with open(output, newline='') as f:
      rows[fmt] = list(csv.reader(f))
    predictions = tf_ipmssl.predict(directories[fmt], batches['native'])
    np.testing.assert_array_equal(predictions.labels, expected)
    assert predictions.label_names == tuple(predictions.class_names[k] for k in expected)
  atol = RESIZED_ATOL if name == 'folder64' else ATOL
  for fmt in ('onnx', 'litert'):
    assert rows[fmt][0] == rows['saved_model'][0]
    assert [r[:2] for r in rows[fmt]] == [r[:2] for r in rows['saved_model']]
    np.testing.assert_allclose([[float(v) for v in r[2:]] for r in rows[fmt][1:]],
                               [[float(v) for v in r[2:]] for r in rows['saved_model'][1:]],
                               rtol=0, atol=atol)


@pytest.mark.numerics
@pytest.mark.parametrize('fmt', FORMATS)
def test_every_format_answers_the_scores_of_the_saved_model(exported, served, fmt):
  """The "none of these classes" scores (foreign_score.py) agree across formats: float32
  graphs within the probabilities' reasoning above, scaled to each score's size (a logit-sized
  score moves by ~1e-6 of the logits; the softmax and entropy scores by less), and with int8
  weights within 0.05 of the logits' spread, the tolerance the probabilities get above."""
  name, _, batches = exported
  for batch in batches:
    expected = served['saved_model'][batch][2]
    scores = served[fmt][batch][2]
    assert scores.shape == expected.shape and scores.dtype == np.float32
    size = max(1.0, float(np.abs(expected).max()))
    resized = name == 'folder64' and batch != 'native'
    atol = (0.05 if fmt == 'litert_int8' else RESIZED_ATOL if resized else ATOL) * size
    np.testing.assert_allclose(scores, expected, rtol=0, atol=atol, err_msg=batch)


def test_the_metadata_states_the_scores_and_their_thresholds(exported):
  """Every format states the same scores and thresholds (fixed once, on the run's validation
  split, or its labeled images where it has none), the ONNX model in its properties too."""
  import onnx  # pylint: disable=g-import-not-at-top
  name, directories, _ = exported
  entries = []
  for directory in directories.values():
    with open(os.path.join(directory, 'tf_ipmssl_classifier.json')) as f:
      entries.append(json.load(f)['foreign_score'])
  assert all(entry == entries[0] for entry in entries)
  entry = entries[0]
  assert entry['names'] == ['softmax', 'entropy', 'fake', 'critic']  # K+1 (ssl.gin's).
  assert (entry['fitted_on'], entry['images']) == (
      ('labeled', 12) if name == 'folder64' else ('validation', 20))
  assert set(entry['thresholds']) == set(entry['names']) and entry['default'] == 'critic'
  model = onnx.load(os.path.join(directories['onnx'], 'model.onnx'))
  props = {p.key: json.loads(p.value) for p in model.metadata_props}
  assert props['foreign_score'] == entry
  # Each threshold is the smallest score that 95% of the images it was fitted on reach, counted
  # here on the SavedModel's scores of those images (the run's own split, as it trained on it).
  from tf_ipmssl import api  # pylint: disable=g-import-not-at-top
  data = api.load(os.path.join(os.path.dirname(directories['saved_model']), 'run')).data()
  images = data.labeled_images if name == 'folder64' else data.validation_images
  assert len(images) == entry['images']
  scores = runtimes.open_classifier(directories['saved_model'])(images)['scores']
  for i, score in enumerate(entry['names']):
    counted = counting.threshold_by_count(list(scores[:, i]))
    size = max(1.0, float(np.abs(scores[:, i]).max()))
    assert entry['thresholds'][score] == pytest.approx(counted, rel=0, abs=1e-5 * size), score


_NO_TENSORFLOW_SCRIPT = """
import importlib.abc, json, sys
class Blocked(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path, target=None):
    if name.split('.')[0] in ('tensorflow', 'keras', 'tensorflow_datasets', 'tensorboard'):
      raise ImportError(name + ' is not installed here')
sys.meta_path.insert(0, Blocked())
import numpy as np
from tf_ipmssl.serving import pillow_images, runtimes
export_dirs, paths = json.loads(sys.argv[1]), json.loads(sys.argv[2])
answers = {}
for name, export_dir in export_dirs.items():
  classifier = runtimes.open_classifier(export_dir)
  images = np.stack([pillow_images.read_image(p, classifier.input_shape[-1]) for p in paths])
  out = classifier(images)
  answers[name] = {'class_names': [classifier.class_names[l] for l in out['labels']],
                   'scores': out['scores'].tolist(), 'format': classifier.format}
print(json.dumps(answers))
"""


def test_served_from_files_with_tensorflow_and_keras_unimportable(exported, tmp_path):
  """The serving install (numpy, pillow, onnxruntime, ai-edge-litert): image files decoded by
  pillow_images and labelled by class name from the .onnx and .tflite files alone (copied
  without the metadata file beside them: each describes itself), in a process where
  importing TensorFlow or Keras fails; the answers are bin/predict's (the SavedModel, files
  decoded by TensorFlow)."""
  import shutil  # pylint: disable=g-import-not-at-top
  name, directories, batches = exported
  alone = tmp_path / 'alone'
  alone.mkdir()
  models = {'onnx': str(alone / 'model.onnx'), 'litert': str(alone / 'float.tflite'),
            'litert_int8': str(alone / 'int8.tflite')}
  for fmt, path in models.items():
    shutil.copy(os.path.join(directories[fmt], 'model.onnx' if fmt == 'onnx'
                             else 'model.tflite'), path)
  images = batches['native'][:8]
  paths = []
  for i, image in enumerate(images):
    path = str(tmp_path / f'{i}.{"jpg" if i % 2 else "png"}')
    tf.io.write_file(path, tf.io.encode_jpeg(image, quality=90) if i % 2
                     else tf.io.encode_png(image))
    paths.append(path)
  result = subprocess.run(
      [sys.executable, '-c', _NO_TENSORFLOW_SCRIPT, json.dumps(models), json.dumps(paths)],
      capture_output=True, text=True, env=runs.environment(), timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  answers = json.loads(result.stdout.strip().splitlines()[-1])
  from tf_ipmssl import api  # pylint: disable=g-import-not-at-top
  expected = api.predict(directories['saved_model'], paths)
  assert expected.paths == tuple(paths)
  for fmt in ('onnx', 'litert'):
    assert answers[fmt]['format'] == fmt
    np.testing.assert_allclose(answers[fmt]['scores'], expected.scores, rtol=0,
                               atol=1e-4 * max(1.0, float(np.abs(expected.scores).max())))
    top_two = np.sort(expected.probabilities, axis=-1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 1e-4
    assert clear.any()
    assert [n for n, c in zip(answers[fmt]['class_names'], clear) if c] == [
        n for n, c in zip(expected.label_names, clear) if c], fmt

  assert answers['litert_int8']['format'] == 'litert_int8'
  size = max(1.0, float(np.abs(expected.scores).max()))  # int8 weights: as the batches above.
  np.testing.assert_allclose(answers['litert_int8']['scores'], expected.scores, rtol=0,
                             atol=0.05 * size)


def test_the_tflite_file_carries_the_metadata_file(exported):
  """The LiteRT files describe themselves: the metadata inside the flatbuffer (read with the
  LiteRT package's schema, litert_metadata.py) is the metadata file's, but the list of files
  written beside it."""
  from tf_ipmssl.serving import litert_metadata  # pylint: disable=g-import-not-at-top
  _, directories, _ = exported
  for fmt in ('litert', 'litert_int8'):
    with open(os.path.join(directories[fmt], 'tf_ipmssl_classifier.json')) as f:
      beside = json.load(f)
    inside = litert_metadata.read(os.path.join(directories[fmt], 'model.tflite'))
    del beside['entries']
    assert inside == beside and inside['format'] == fmt
