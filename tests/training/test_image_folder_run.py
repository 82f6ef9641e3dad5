"""An image-folder run end to end: bin/train (a few steps, tiny networks) -> its export, which
takes images of any size and answers class names -> bin/predict on image files, equal to
calling the SavedModel directly; the export serves in a process where tf_ipmssl cannot be
imported."""
import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import numerics
from tests.training import runs

CLASSES = {'light': 190, 'dark': 60}  # Written out of order: the class names come sorted.


def _write(path, image):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  encode = tf.io.encode_jpeg if path.endswith('.jpg') else tf.io.encode_png
  tf.io.write_file(path, encode(image))
  return path


def _image(rng, value, height, width):
  return np.clip(rng.normal(value, 30, [height, width, 3]), 0, 255).astype(np.uint8)


@pytest.fixture(scope='module')
def folder_run(tmp_path_factory):
  """A colour folder without validation/: images of many sizes."""
  rng = np.random.default_rng(0)
  root = tmp_path_factory.mktemp('images')
  for name, value in CLASSES.items():
    for i in range(8):
      _write(str(root / 'labeled' / name / f'{i}.png'), _image(rng, value, *rng.integers(20, 60, 2)))
    for i in range(4):
      _write(str(root / 'test' / name / f'{i}.png'), _image(rng, value, 32, 32))
  for i in range(16):
    _write(str(root / 'unlabeled' / f'{i // 8}' / f'{i}.jpg'),
           _image(rng, 125, *rng.integers(20, 60, 2)))
  model_dir = str(tmp_path_factory.mktemp('run') / 'model')
  bindings = runs.tiny_bindings(root, dataset='image_folder', **{
      'build_ssl_data.num_labeled': None, 'build_ssl_data.validation_size': 0,
      'build_ssl_data.source': "'auto'"})
  result = runs.run_train(model_dir, bindings)
  assert result.returncode == 0, result.stdout + result.stderr
  return root, model_dir, result


@pytest.fixture(scope='module')
def new_images(tmp_path_factory):
  """Image files of other sizes than 32x32 (PNG and JPEG), and one that is no image."""
  rng = np.random.default_rng(1)
  directory = tmp_path_factory.mktemp('new')
  paths = [_write(str(directory / 'a_wide.png'), _image(rng, 190, 30, 75)),
           _write(str(directory / 'b_tall.jpg'), _image(rng, 60, 90, 41)),
           _write(str(directory / 'c_square.png'), _image(rng, 125, 32, 32))]
  (directory / 'd_broken.png').write_bytes(b'not an image')
  return str(directory), paths


def _direct(export_dir, paths):
  """The SavedModel's answers for each file, one image per call, the files decoded here."""
  serve = tf.saved_model.load(export_dir).signatures['serving_default']
  answers = []
  for path in paths:
    image = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
    out = serve(images=image[tf.newaxis])
    answers.append((out['class_names'].numpy()[0].decode(), out['probabilities'].numpy()[0]))
  return answers


def test_run_says_it_selects_no_step_and_names_the_classes(folder_run):
  _, model_dir, result = folder_run
  first = result.stdout.splitlines()[0]
  assert first.startswith('No validation split: no step is selected'), result.stdout
  assert "the last step's classifier is reported and exported" in first
  metrics = json.load(open(os.path.join(model_dir, 'metrics.json')))
  dataset = json.load(open(os.path.join(model_dir, 'dataset.json')))
  assert metrics['class_names'] == dataset['class_names'] == ['dark', 'light']
  assert metrics['exported'] == {'checkpoint': 'latest', 'step': 4}
  assert dataset['image_shape'] == [32, 32, 3] and dataset['resize'].startswith('short side')
  assert 'Training ssl on image_folder' in result.stdout and '16 labeled, 32 unlabeled, 0 ' \
      'validation, 8 test' in result.stdout


@pytest.mark.numerics
def test_export_resizes_any_size_by_the_training_rule(folder_run):
  from tf_ipmssl.data import image_rules  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import pipelines  # pylint: disable=g-import-not-at-top
  _, model_dir, _ = folder_run
  module = tf.saved_model.load(os.path.join(model_dir, 'export'))
  serve = module.signatures['serving_default']
  assert list(module.signatures['class_names']()['class_names'].numpy()) == [b'dark', b'light']
  images = _image(np.random.default_rng(2), 125, 45, 70)[np.newaxis].repeat(3, axis=0)
  images[1] = 255 - images[1]
  out = serve(images=tf.constant(images))
  fitted = image_rules.fit_images(images)
  critic, _ = runs.restore_run(model_dir).restore_critic('latest')
  expected = tf.nn.softmax(critic.classify(pipelines.to_model_input(fitted), training=False))
  np.testing.assert_allclose(out['probabilities'].numpy(), expected.numpy(), rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(serve(images=fitted)['probabilities'].numpy(),
                             out['probabilities'].numpy(), rtol=1e-6, atol=1e-7)
  labels = out['labels'].numpy()
  assert [n.decode() for n in out['class_names'].numpy()] == [['dark', 'light'][l]
                                                              for l in labels]
  # The export's graph against the eager critic: labels where they are clear of the
  # tolerance above (rtol 1e-5 of probabilities <= 1, atol 1e-6).
  numerics.assert_labels_agree_where_clear(labels, expected.numpy(), 1e-5 + 1e-6)
  with pytest.raises(tf.errors.InvalidArgumentError, match=r'shape \[N, H, W, 3\]'):
    serve(images=tf.zeros([1, 40, 40, 1], tf.uint8))
  empty = serve(images=tf.zeros([0, 50, 20, 3], tf.uint8))
  assert empty['probabilities'].shape == (0, 2) and empty['class_names'].shape == (0,)


def test_bin_export_keeps_the_resize_rule(folder_run, tmp_path):
  _, model_dir, _ = folder_run
  export_dir = str(tmp_path / 'again')
  result = runs.run_program('export', f'--model_dir={model_dir}', '--checkpoint=latest',
                            f'--export_dir={export_dir}')
  assert result.returncode == 0, result.stderr
  image = _image(np.random.default_rng(3), 125, 27, 61)[np.newaxis]
  answers = [tf.saved_model.load(d).signatures['serving_default'](images=tf.constant(image))
             for d in (export_dir, os.path.join(model_dir, 'export'))]
  np.testing.assert_array_equal(answers[0]['probabilities'], answers[1]['probabilities'])
  metadata = json.load(open(os.path.join(export_dir, 'tf_ipmssl_classifier.json')))
  assert metadata['class_names'] == ['dark', 'light'] and metadata['resize']


@pytest.mark.numerics
def test_bin_predict_equals_the_saved_model(folder_run, new_images, tmp_path):
  _, model_dir, _ = folder_run
  directory, paths = new_images
  export_dir = os.path.join(model_dir, 'export')
  output = tmp_path / 'preds.csv'
  result = runs.run_program('predict', f'--export_dir={export_dir}', directory,
                            f'--output={output}')
  assert result.returncode == 0, result.stderr
  assert 'Traceback' not in result.stderr
  broken = os.path.join(directory, 'd_broken.png')
  assert f'skipped {broken}: not a readable PNG, JPEG, BMP, GIF or WebP image' in result.stderr
  assert '1 of 4 file(s) skipped' in result.stderr
  expected = _direct(export_dir, paths)
  lines = result.stdout.strip().splitlines()
  assert len(lines) == 3
  with open(output, newline='') as f:
    scores = {row['path']: row['score_critic'] for row in csv.DictReader(f)}
  for line, path, (name, probabilities) in zip(lines, paths, expected):
    shown_path, shown_name, shown_probability, shown_score = line.split('\t')
    assert (shown_path, shown_name) == (path, name)
    assert float(shown_probability) == pytest.approx(probabilities.max(), abs=5e-5)
    # The default "none of these classes" score, the critic's (of the CSV's every score).
    assert float(shown_score) == pytest.approx(float(scores[path]), rel=1e-3, abs=1e-4)
  with open(output, newline='') as f:
    rows = list(csv.reader(f))
  assert rows[0][:7] == ['path', 'class_name', 'probability', 'dark', 'light', 'score',
                         'none_of_these']
  for row, path, (name, probabilities) in zip(rows[1:], paths, expected):
    assert row[:2] == [path, name]
    np.testing.assert_allclose([float(v) for v in row[3:5]], probabilities, rtol=1e-6)
    assert float(row[2]) == pytest.approx(probabilities.max(), rel=1e-6)
  assert len(rows) == 4


def test_image_paths_lists_each_real_file_once(tmp_path):
  from tf_ipmssl.serving import prediction  # pylint: disable=g-import-not-at-top
  root, outside = tmp_path / 'asked', tmp_path / 'outside'
  for path in (root / 'a.png', root / 'sub' / 'b.png', outside / 'o.png'):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'')
  os.symlink('..', root / 'sub' / 'loop')  # Back up to the folder asked for.
  os.symlink('.', root / 'sub' / 'here')
  os.symlink('../..', root / 'sub' / 'above')  # The folder that holds it: a loop too.
  os.symlink('../outside', root / 'twin1')  # One folder through two links.
  os.symlink('../outside', root / 'twin2')
  os.symlink('sub/b.png', root / 'z.png')  # b.png again.
  # Each real file once, at the first path of the walk (folders' entries in sorted order).
  assert prediction.image_paths([str(root), str(outside / 'o.png')]) == [
      str(root / 'a.png'), str(root / 'sub' / 'b.png'), str(root / 'twin1' / 'o.png'),
      str(outside / 'o.png')]


@pytest.mark.numerics
def test_predictor_takes_webp_and_refuses_animated_webp(folder_run, tmp_path):
  from PIL import Image  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.serving import prediction  # pylint: disable=g-import-not-at-top
  _, model_dir, _ = folder_run
  image = _image(np.random.default_rng(4), 190, 30, 45)
  still = str(tmp_path / 'still.webp')
  Image.fromarray(image).save(still, lossless=True)
  moving = str(tmp_path / 'moving.webp')
  frames = [Image.fromarray(image), Image.fromarray(255 - image)]
  frames[0].save(moving, save_all=True, append_images=frames[1:], lossless=True)
  export_dir = os.path.join(model_dir, 'export')
  classified, refused = prediction.Predictor(export_dir).predict([still, moving])
  (name, probabilities), = _direct(export_dir, [still])
  assert classified.class_name == name and classified.problem is None
  np.testing.assert_allclose(classified.probabilities, probabilities, rtol=1e-6)
  assert refused.problem == ('is an animated WebP, which TensorFlow cannot decode safely; save '
                             'its first frame as a still image')


def test_bin_predict_without_any_image(folder_run, tmp_path):
  _, model_dir, _ = folder_run
  (tmp_path / 'x.png').write_bytes(b'')
  result = runs.run_program('predict', f'--export_dir={os.path.join(model_dir, "export")}',
                            str(tmp_path / 'x.png'))
  assert result.returncode == 1
  errors = [line for line in result.stderr.splitlines() if line.startswith('error: ')]
  assert errors == ['error: none of the 1 file(s) could be classified (see above)']


_WITHOUT_TF_IPMSSL = """
import sys
sys.modules['tf_ipmssl'] = None  # Any import of it now fails.
try:
  import tf_ipmssl
  raise SystemExit('tf_ipmssl is importable')
except ImportError:
  pass
import numpy as np
import tensorflow as tf
serve = tf.saved_model.load(sys.argv[1]).signatures['serving_default']
image = tf.io.decode_image(tf.io.read_file(sys.argv[2]), channels=3)
out = serve(images=image[tf.newaxis])
print(out['class_names'].numpy()[0].decode(), *out['probabilities'].numpy()[0])
"""


@pytest.mark.numerics
def test_export_serves_without_tf_ipmssl(folder_run, new_images, tmp_path):
  _, model_dir, _ = folder_run
  _, paths = new_images
  export_dir = os.path.join(model_dir, 'export')
  env = runs.environment()
  env.pop('PYTHONPATH')
  result = subprocess.run([sys.executable, '-c', _WITHOUT_TF_IPMSSL, export_dir, paths[1]],
                          capture_output=True, text=True, env=env, timeout=300,
                          cwd=str(tmp_path))
  assert result.returncode == 0, result.stderr
  name, *probabilities = result.stdout.split()
  # A 90x41 JPEG: what the export answers in this process, where the rule is the library's.
  (expected_name, expected), = _direct(export_dir, paths[1:2])
  assert name == expected_name
  np.testing.assert_allclose([float(p) for p in probabilities], expected, rtol=1e-6)


def test_export_and_evaluate_default_to_the_checkpoint_the_run_reports(folder_run, tmp_path):
  """A run without a validation split keeps no best checkpoint: bin/export and bin/evaluate
  take its latest, the one it reported and exported; asking for best names the flag that
  works, in one line."""
  _, model_dir, _ = folder_run
  copy = str(tmp_path / 'model')
  shutil.copytree(model_dir, copy)
  result = runs.run_program('export', f'--model_dir={copy}', '--format=saved_model')
  assert result.returncode == 0, result.stderr
  latest = tf.train.latest_checkpoint(os.path.join(copy, 'checkpoints'))
  assert result.stdout.splitlines() == [
      f'Exported the classifier of {latest} as saved_model to {copy}/export_latest']
  result = runs.run_program('evaluate', f'--model_dir={copy}')
  assert result.returncode == 0, result.stderr
  with open(os.path.join(copy, 'metrics.json')) as f:
    final = json.load(f)['final']
  assert json.loads(result.stdout)['error'] == final['test_error']
  result = runs.run_program('export', f'--model_dir={copy}', '--checkpoint=best')
  assert result.returncode != 0 and 'Traceback' not in result.stderr
  assert result.stderr.strip().splitlines()[-1].endswith(
      '(a run without a validation split keeps none); use --checkpoint=latest '
      "(checkpoint='latest'), or leave it out for the one the run reports")
  assert not os.path.exists(os.path.join(copy, 'export_best'))
