"""The exported classifier serves in TensorFlow's own tools: `saved_model_cli run`, a
TF1-style Session load (TF Serving's path) and tf.saved_model.load answer with the labels
of the in-memory classifier (and their class names); the signature enforces [N, H, W, C] uint8 and answers an empty
batch with empty outputs."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tests import fixtures
from tests import numerics
from tests.training import runs
from tf_ipmssl.data import dataset_specs

SAVED_MODEL_CLI = str(pathlib.Path(sys.executable).with_name('saved_model_cli'))

_TF1_SCRIPT = """
import sys
import numpy as np
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
images = np.load(sys.argv[2])
with tf.compat.v1.Session(graph=tf.Graph()) as session:
  meta_graph = tf.compat.v1.saved_model.loader.load(session, ['serve'], sys.argv[1])
  signature = meta_graph.signature_def['serving_default']
  outputs = session.run(
      {k: v.name for k, v in signature.outputs.items()},
      feed_dict={signature.inputs['images'].name: images})
np.save(sys.argv[3], outputs['labels'])
np.save(sys.argv[4], outputs['probabilities'])
"""


@pytest.fixture(scope='module')
def exported_run(tmp_path_factory):
  """The test run's tiny run (runs.shared_run), read only."""
  return runs.shared_run(tmp_path_factory)[1]


@pytest.fixture(scope='module')
def images_and_expected(exported_run, tmp_path_factory):
  """Images, their .npy file, the in-memory classifier's probabilities (what bin/evaluate
  uses), and how far another computation of them may be (tests/numerics.py: the export's
  graph, in this process or another, sums in other orders)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import pipelines  # pylint: disable=g-import-not-at-top
  images, _ = fixtures.fake_images_and_labels('fashion_mnist', 16, seed=3)
  critic, _ = runs.restore_run(exported_run).restore_critic('best')
  logits = critic.classify(pipelines.to_model_input(tf.constant(images)), training=False)
  path = tmp_path_factory.mktemp('inputs') / 'images.npy'
  np.save(path, images)
  tolerance = numerics.probability_tolerance(critic, pipelines.to_model_input(tf.constant(images)))
  return images, str(path), tf.nn.softmax(logits).numpy(), tolerance


def _cli(export_dir, inputs, outdir=None):
  command = [SAVED_MODEL_CLI, 'run', '--dir', export_dir, '--tag_set', 'serve',
             '--signature_def', 'serving_default', '--inputs', f'images={inputs}']
  if outdir:
    command += ['--outdir', outdir]
  return subprocess.run(command, capture_output=True, text=True, env=runs.environment(),
                        timeout=300)


@pytest.mark.numerics
def test_saved_model_cli_run_answers(exported_run, images_and_expected, tmp_path):
  _, path, expected, tolerance = images_and_expected
  result = _cli(os.path.join(exported_run, 'export'), path, str(tmp_path))
  assert result.returncode == 0, result.stderr[-3000:]
  numerics.assert_labels_agree_where_clear(np.load(tmp_path / 'labels.npy'), expected, tolerance)
  np.testing.assert_allclose(np.load(tmp_path / 'probabilities.npy'), expected, rtol=0,
                             atol=tolerance)


@pytest.mark.numerics
def test_tf1_session_load_answers(exported_run, images_and_expected, tmp_path):
  _, path, expected, tolerance = images_and_expected
  result = subprocess.run(
      [sys.executable, '-c', _TF1_SCRIPT, os.path.join(exported_run, 'export'), path,
       str(tmp_path / 'l.npy'), str(tmp_path / 'p.npy')],
      capture_output=True, text=True, env=runs.environment(), timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  numerics.assert_labels_agree_where_clear(np.load(tmp_path / 'l.npy'), expected, tolerance)
  np.testing.assert_allclose(np.load(tmp_path / 'p.npy'), expected, rtol=0, atol=tolerance)


@pytest.mark.numerics
def test_tf2_load_answers_and_keeps_the_metadata(exported_run, images_and_expected):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.serving import runtimes  # pylint: disable=g-import-not-at-top
  images, _, expected, tolerance = images_and_expected
  export_dir = os.path.join(exported_run, 'export')
  module = tf.saved_model.load(export_dir)
  out = module.signatures['serving_default'](images=tf.constant(images))
  assert set(out) == {'probabilities', 'labels', 'class_names', 'scores'}
  # The K+1 critic's four "none of these classes" scores, named in the metadata.
  assert out['scores'].shape == (len(images), 4)
  labels = out['labels'].numpy()
  numerics.assert_labels_agree_where_clear(labels, expected, tolerance)
  # Fashion-MNIST's class names, by label.
  names = list(dataset_specs.FASHION_MNIST.class_names)
  assert [n.decode() for n in out['class_names'].numpy()] == [names[l] for l in labels]
  assert [n.decode() for n in module.signatures['class_names']()['class_names'].numpy()] == names
  classifier = runtimes.open_classifier(export_dir)
  assert classifier.metadata['image_shape'] == [28, 28, 1]
  assert classifier.metadata['class_names'] == names and classifier.metadata['resize'] is None
  numerics.assert_labels_agree_where_clear(classifier(images)['labels'], expected, tolerance)


@pytest.mark.parametrize('shape', [(2, 28, 28, 3), (2, 32, 32, 1), (2, 28, 27, 1)])
def test_signature_refuses_wrong_shape(exported_run, shape):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  module = tf.saved_model.load(os.path.join(exported_run, 'export'))
  with pytest.raises(tf.errors.InvalidArgumentError, match=r'shape \[N, 28, 28, 1\]'):
    module.signatures['serving_default'](images=tf.zeros(shape, tf.uint8))


def test_saved_model_cli_refuses_wrong_channels(exported_run, tmp_path):
  np.save(tmp_path / 'rgb.npy', np.zeros([2, 28, 28, 3], np.uint8))
  result = _cli(os.path.join(exported_run, 'export'), str(tmp_path / 'rgb.npy'))
  assert result.returncode != 0
  # The Session checks the fed shape against the signature's before the graph's asserts.
  assert 'Cannot feed value of shape (2, 28, 28, 3)' in result.stderr
  assert '(None, 28, 28, 1)' in result.stderr


def test_empty_batch_answers_empty_outputs(exported_run):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  module = tf.saved_model.load(os.path.join(exported_run, 'export'))
  out = module.signatures['serving_default'](images=tf.zeros([0, 28, 28, 1], tf.uint8))
  assert out['labels'].shape == (0,) and out['probabilities'].shape == (0, 10)
  assert out['class_names'].shape == (0,) and out['scores'].shape == (0, 4)
