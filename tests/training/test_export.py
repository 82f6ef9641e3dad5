"""SavedModel export: a fresh process predicts what the restored classifier predicts; the
trainer exports the classifier of the best validation step."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests import fixtures
from tests import numerics
from tests.training import runs
from tf_ipmssl.run_dir import reporting

_RELOAD_SCRIPT = """
import json, sys
import numpy as np
import tensorflow as tf
module = tf.saved_model.load(sys.argv[1])
images = np.load(sys.argv[2])
out = module.signatures['serving_default'](images=tf.constant(images))
np.save(sys.argv[3], out['probabilities'].numpy())
np.save(sys.argv[4], out['labels'].numpy())
"""


@pytest.fixture(scope='module')
def exported_run(tmp_path_factory):
  """A copy of the test run's tiny run evaluated at steps 1, 2, 3, 4 (runs.shared_run); the
  best is kept and exported."""
  return runs.copy_of_shared_run(tmp_path_factory, tmp_path_factory.mktemp('run') / 'model',
                                 **{'train.steps': 4, 'train.eval_every': 1})[:2]


@pytest.mark.numerics
def test_reloaded_export_predicts_like_in_memory_model(exported_run, tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import pipelines  # pylint: disable=g-import-not-at-top
  _, model_dir = exported_run
  images, _ = fixtures.fake_images_and_labels('fashion_mnist', 24, seed=7)
  run = runs.restore_run(model_dir)
  critic, _ = run.restore_critic('best')
  dataset = run.dataset
  assert dataset['image_shape'] == [28, 28, 1]
  x = pipelines.to_model_input(tf.constant(images))
  expected = tf.nn.softmax(critic.classify(x, training=False)).numpy()
  # Another process, the export's graph: within float32's rounding (tests/numerics.py).
  tolerance = numerics.probability_tolerance(critic, x)

  np.save(tmp_path / 'images.npy', images)
  subprocess.run([sys.executable, '-c', _RELOAD_SCRIPT, os.path.join(model_dir, 'export'),
                  str(tmp_path / 'images.npy'), str(tmp_path / 'p.npy'), str(tmp_path / 'l.npy')],
                 check=True, env=runs.environment(), timeout=300)
  probabilities = np.load(tmp_path / 'p.npy')
  np.testing.assert_allclose(probabilities, expected, rtol=0, atol=tolerance)
  numerics.assert_labels_agree_where_clear(np.load(tmp_path / 'l.npy'), expected, tolerance)
  # Ten probabilities of float32's rounding (eps/2 each) and the softmax's division.
  np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=16 * numerics.EPS32)
  # The best validation step is exported (which step that is depends on how a tiny run
  # learns on this CPU: test_the_best_step_not_the_last_is_exported sets it).
  metrics = json.load(open(os.path.join(model_dir, 'metrics.json')))
  assert metrics['exported'] == {'checkpoint': 'best', 'step': metrics['best']['step']}


@pytest.mark.numerics
def test_the_best_step_not_the_last_is_exported(tmp_path):
  """The trainer's export with a best/ checkpoint of step 2 (weights A) and a critic trained
  on to step 4 (weights B, A with S negated): the export predicts what A predicts."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import pipelines  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import ssl_data  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.objectives import fisher  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.serving import runtimes  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.serving import score_graph  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import run as run_lib  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import run_config  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.training import trainer  # pylint: disable=g-import-not-at-top
  data = ssl_data.build_ssl_data(ssl_data.BuildSslData(dataset='fashion_mnist', source='local',
                                                       data_dir=runs.make_data(tmp_path / 'data'),
                                                       num_labeled=20, validation_size=20))
  config = run_config.RunConfig.create(settings={'constraints': (fisher.Fisher(),)}, steps=4,
                                       critic={'width': 0.0625})
  model_dir = str(tmp_path / 'run')
  run = run_lib.Run.build(config, num_classes=data.num_classes, image_shape=data.image_shape,
                          model_dir=model_dir)
  images, _ = fixtures.fake_images_and_labels('fashion_mnist', 24, seed=7)
  x = pipelines.to_model_input(tf.constant(images))
  critic = run.evaluated_critic
  head = critic.s_head
  best = tf.nn.softmax(critic.classify(x, training=False)).numpy()
  best_labels = best.argmax(-1)
  tolerance = numerics.probability_tolerance(critic, x)
  run.state.best['step'].assign(2)
  run.best_manager.save(checkpoint_number=2)
  head.kernel.assign(-head.kernel)
  head.bias.assign(-head.bias)
  last_labels = critic.classify(x, training=False).numpy().argmax(-1)
  assert (best_labels != last_labels).any()  # The test can tell the two apart.

  # pylint: disable=protected-access
  selected = trainer._restore_selected(run, 4)
  assert selected == {'checkpoint': 'best', 'step': 2}
  trainer._export_classifier(
      run, data, model_dir, score_graph.fit(run.evaluated_critic, config.formulation, data),
      {'checkpoint': selected['checkpoint']})
  # pylint: enable=protected-access
  exported = runtimes.open_classifier(os.path.join(model_dir, 'export'))(images)['labels']
  # The export's graph against the eager critic: labels where they are clear.
  numerics.assert_labels_agree_where_clear(exported, best, tolerance)


def test_export_rejects_wrong_shape_and_dtype(exported_run):
  from tf_ipmssl import errors  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.serving import runtimes  # pylint: disable=g-import-not-at-top
  _, model_dir = exported_run
  classifier = runtimes.open_classifier(os.path.join(model_dir, 'export'))
  good = np.zeros([2, 28, 28, 1], np.uint8)
  assert classifier(good)['labels'].shape == (2,)
  with pytest.raises(errors.UserError, match=r'shape \[N, 28, 28, 1\]'):
    classifier(np.zeros([2, 32, 32, 1], np.uint8))
  with pytest.raises(errors.UserError, match='uint8'):
    classifier(good.astype(np.float32))
  # The raw signature itself refuses a float input.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  module = tf.saved_model.load(os.path.join(model_dir, 'export'))
  with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)):
    module.signatures['serving_default'](images=tf.zeros([2, 28, 28, 1], tf.float32))


def test_bin_export_and_evaluate(exported_run, tmp_path):
  _, model_dir = exported_run
  export_dir = str(tmp_path / 'best_export')
  result = runs.run_program('export', f'--model_dir={model_dir}', '--checkpoint=best',
                            f'--export_dir={export_dir}')
  assert result.returncode == 0, result.stderr
  assert os.path.isfile(os.path.join(export_dir, 'saved_model.pb'))
  evaluations = {}
  for name, extra in (('latest', []), ('best', ['--checkpoint=best']),
                      ('export', [f'--export_dir={os.path.join(model_dir, "export")}'])):
    result = runs.run_program('evaluate', f'--model_dir={model_dir}', '--split=test', *extra)
    assert result.returncode == 0, result.stderr
    evaluations[name] = json.loads(result.stdout.strip().splitlines()[-1])
    assert evaluations[name]['examples'] == 40
  metrics = json.load(open(os.path.join(model_dir, 'metrics.json')))
  # The latest checkpoint gives the error the trainer logged at the end; the best
  # checkpoint and the trainer's export give the error at the best validation step.
  assert evaluations['latest']['error'] == pytest.approx(metrics['final']['test_error'])
  assert evaluations['best']['error'] == pytest.approx(metrics['best']['test_error'])
  assert evaluations['export']['error'] == pytest.approx(metrics['best']['test_error'])
  assert metrics['exported'] == {'checkpoint': 'best', 'step': metrics['best']['step']}
  # Each class's error by name, and the confusion matrix, as the run recorded them.
  for name, part in (('latest', 'final'), ('best', 'best'), ('export', 'best')):
    assert evaluations[name]['class_errors'] == metrics[part]['test_class_errors']
    assert evaluations[name]['confusion'] == metrics[part]['test_confusion']
  text = runs.run_program('evaluate', f'--model_dir={model_dir}', '--checkpoint=best',
                          '--output=text')
  assert text.returncode == 0, text.stderr
  lines = text.stdout.strip().splitlines()[-11:]
  assert lines[0].startswith(f'test error {metrics["best"]["test_error"]:.2f}% of 40 images')
  for line, (name, error) in zip(lines[1:], metrics['best']['test_class_errors'].items()):
    assert line.split()[0] == name.split()[0]
    assert reporting.fmt(error) in line


def test_bin_predict_on_a_native_size_export(exported_run, tmp_path):
  """A Fashion-MNIST export takes 28x28 images: a colour one is made grayscale, another size
  is skipped; the names are Fashion-MNIST's."""
  import csv  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.data import dataset_specs  # pylint: disable=g-import-not-at-top
  _, model_dir = exported_run
  rng = np.random.default_rng(5)
  gray = rng.integers(0, 256, [28, 28, 1], dtype=np.uint8)
  colour = rng.integers(0, 256, [28, 28, 3], dtype=np.uint8)
  paths = [str(tmp_path / name) for name in ('gray.png', 'colour.png', 'big.png')]
  for path, image in zip(paths, (gray, colour, np.zeros([32, 32, 1], np.uint8))):
    tf.io.write_file(path, tf.io.encode_png(image))
  export_dir = os.path.join(model_dir, 'export')
  result = runs.run_program('predict', f'--export_dir={export_dir}', *paths,
                            f'--output={tmp_path / "p.csv"}')
  assert result.returncode == 0, result.stderr
  assert f'skipped {paths[2]}: is 32x32; this classifier takes 28x28 images' in result.stderr
  serve = tf.saved_model.load(export_dir).signatures['serving_default']
  inputs = np.stack([gray, tf.image.rgb_to_grayscale(colour).numpy()])
  expected = serve(images=tf.constant(inputs))['probabilities'].numpy()
  names = list(dataset_specs.FASHION_MNIST.class_names)
  with open(tmp_path / 'p.csv', newline='') as f:
    rows = list(csv.reader(f))
  assert rows[0] == ['path', 'class_name', 'probability'] + names + [
      'score', 'none_of_these', 'score_softmax', 'score_entropy', 'score_fake', 'score_critic']
  assert [row[:2] for row in rows[1:]] == [[p, names[e.argmax()]]
                                           for p, e in zip(paths, expected)]
  np.testing.assert_allclose([[float(v) for v in row[3:13]] for row in rows[1:]], expected,
                             rtol=1e-6)


@pytest.mark.parametrize('resize', [False, True])
def test_the_served_computation_waits_for_the_shape_asserts(resize):
  """A wrong shape must fail in the asserts, whose message names the expected shape, never
  first in a shape check inside the computation (the resize's EnsureShape, a convolution):
  every op that reads the images depends on the assert (the executor's order would
  otherwise decide which message a caller sees)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.networks import critic as critic_lib  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.serving import export  # pylint: disable=g-import-not-at-top
  shape = (32, 32, 3)
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=0.0625), 2, 3, seed=0)
  make = export._serving_function  # pylint: disable=protected-access
  serve = tf.function(make(critic, shape, ['a', 'b'], resize))
  spec = tf.TensorSpec([None, None, None, 3] if resize else [None, *shape], tf.uint8)
  graph = serve.get_concrete_function(spec).graph

  def ancestors(op):
    seen, stack = set(), [op]
    while stack:
      current = stack.pop()
      for parent in [t.op for t in current.inputs] + list(current.control_inputs):
        if parent not in seen:
          seen.add(parent)
          stack.append(parent)
    return seen

  asserts = [op for op in graph.get_operations() if op.type == 'Assert']
  # The rank is known when traced (no op is made); the shape's assert is the one.
  assert len(asserts) == 1, [op.type for op in graph.get_operations()]
  placeholder = graph.inputs[0].op
  readers = [op for op in graph.get_operations()
             if op.type in ('EnsureShape', 'Conv2D', 'ResizeBilinear', 'ResizeArea')
             or (placeholder in [t.op for t in op.inputs] and op.type not in (
                 'Shape', 'Rank', 'Identity'))]
  assert any(op.type == 'Conv2D' for op in readers)
  if resize:
    assert any(op.type == 'EnsureShape' for op in readers)
  for op in readers:
    assert set(asserts) <= ancestors(op), op.name


def test_bin_predict_names_a_damaged_jpeg_without_the_decoders_lines(exported_run, tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  _, model_dir = exported_run
  image = np.random.default_rng(0).integers(0, 256, [28, 28, 1], dtype=np.uint8)
  data = tf.io.encode_jpeg(image).numpy()
  (tmp_path / 'half.jpg').write_bytes(data[:len(data) // 2])
  (tmp_path / 'whole.jpg').write_bytes(data)
  result = runs.run_program('predict', f'--export_dir={os.path.join(model_dir, "export")}',
                            str(tmp_path))
  assert result.returncode == 0, result.stderr
  assert result.stdout.startswith(f'{tmp_path / "whole.jpg"}\t')
  lines = [l for l in result.stderr.splitlines() if l.strip()]
  assert lines[0].startswith('score: ')
  assert lines[1].startswith(f'skipped {tmp_path / "half.jpg"}: not a readable PNG, JPEG')
  assert lines[2:] == ['1 of 2 file(s) skipped (see above)'], result.stderr
