"""Runs at 64 and 96 pixels (build_ssl_data.image_size, docs/algorithm.md#image-sizes): the
size in the run's configuration (older records restore as 32), tiny runs that train, resume
bit for bit after a kill and export a classifier serving images of any size, and an image
folder trained at 64."""
import json
import os
import signal

import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs
from tf_ipmssl import errors
from tf_ipmssl.data import image_rules
from tf_ipmssl.data import pipelines
from tf_ipmssl.objectives import fisher
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config


def _config(**data):
  return run_config.RunConfig.create(steps=1, mode='supervised', data=data,
                                     critic={'width': 0.0625})


def test_the_size_is_the_datas_resolved_and_recorded():
  assert _config().image_size == 32  # No dataset bound: 32.
  assert _config(dataset='cifar10').image_size == 32
  config = _config(dataset='fashion_mnist', image_size=96)
  record = config.to_json()
  assert record['build_ssl_data']['image_size'] == 96
  assert 'image_size' not in record['build_critic']
  assert run_config.RunConfig.from_json(record).image_size == 96
  with pytest.raises(errors.ConfigError, match='use one of 32, 64, 96'):
    _config(image_size=48)


def test_a_record_from_before_the_size_restores_as_32():
  record = _config(dataset='fashion_mnist').to_json()
  record = {'format_version': 3, 'train': record['train'],
            'bindings': {k: v for k, v in record.items() if k not in ('format_version', 'train')}}
  del record['bindings']['build_ssl_data']['image_size']
  record['bindings']['build_critic']['image_size'] = 32  # Where it was a critic setting.
  config = run_config.RunConfig.from_json(record)
  assert config.image_size == 32 and config.differing_settings(_config(
      dataset='fashion_mnist')) == []
  with open(runs.REPO_ROOT / 'tests' / 'training' / 'version1_layout_ssl' /
            'run_config.json') as f:
    assert run_config.RunConfig.from_json(json.load(f)).image_size == 32


@pytest.mark.numerics
@pytest.mark.parametrize('size', [64, 96])
def test_the_run_builds_both_networks_at_the_size(size):
  config = run_config.RunConfig.create(
      steps=1, data={'image_size': size}, critic={'width': 0.0625}, generator={'ngf': 4},
      settings={'constraints': [fisher.Fisher()]})
  run = run_lib.Run.build(config, num_classes=10, image_shape=(28, 28, 1))
  assert run.critic.image_size == run.generator.image_size == size
  assert run.critic.body.get_layer('conv7').input.shape[1:3] == (8, 8)


def _bindings(data_dir, size, dataset='fashion_mnist', **overrides):
  return runs.tiny_bindings(data_dir, dataset, **{
      'build_ssl_data.image_size': size, 'train.deterministic_ops': True, **overrides})


def _checkpoint(model_dir):
  return runs.checkpoint_values(tf.train.latest_checkpoint(os.path.join(model_dir,
                                                                        'checkpoints')))


def _served_as_in_memory(model_dir, images, size):
  """The export's probabilities for `images` (uint8 [N, H, W, C] of any size) equal those of
  the critic it exported, restored, on the images fitted to `size` by the training rule."""
  serve = tf.saved_model.load(os.path.join(model_dir, 'export')).signatures['serving_default']
  served = serve(images=tf.constant(images))['probabilities'].numpy()
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    exported = json.load(f)['exported']['checkpoint']  # 'best' on validation, else 'latest'.
  critic, _ = runs.restore_run(model_dir).restore_critic(exported)
  fitted = image_rules.fit_images(images, size)
  expected = tf.nn.softmax(critic.classify(pipelines.to_model_input(fitted), training=False))
  np.testing.assert_allclose(served, expected.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.integration
@pytest.mark.parametrize('size', [64, 96])
def test_a_tiny_run_trains_resumes_and_exports_at_the_size(tmp_path, size):
  data_dir = runs.make_data(tmp_path / 'data')
  reference_dir, killed_dir = str(tmp_path / 'reference'), str(tmp_path / 'killed')
  reference = runs.run_train(reference_dir, _bindings(data_dir, size))
  assert reference.returncode == 0, reference.stderr[-3000:]
  with open(os.path.join(reference_dir, 'run_config.json')) as f:
    assert json.load(f)['build_ssl_data']['image_size'] == size
  with open(os.path.join(reference_dir, 'dataset.json')) as f:
    dataset = json.load(f)
  assert dataset['image_shape'] == [size, size, 1]
  assert dataset['resize'] == image_rules.resize_rule(size)

  # Killed right after its first checkpoint (step 2 of 4), then resumed.
  killed = runs.run_train(killed_dir, _bindings(data_dir, size),
                          fault='checkpoint_written#1=kill')
  assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
  resumed = runs.run_train(killed_dir, _bindings(data_dir, size))
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert 'Resuming from' in resumed.stdout
  expected, actual = _checkpoint(reference_dir), _checkpoint(killed_dir)
  assert expected.keys() == actual.keys()
  # The networks of this size: the critic's convs with its reduction block, the generator's
  # with its upsampling block.
  kernels = {network: sum(1 for name, value in expected.items() if name.startswith(
      f'{network}_optimizer/_trainable_variables/') and np.ndim(value) == 4)
             for network in ('critic', 'generator')}
  assert kernels == {'critic': 10, 'generator': 7}
  for name in expected:
    if not name.startswith('save_counter'):  # How often a checkpoint was written.
      np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)

  rng = np.random.default_rng(size)
  other = rng.integers(0, 256, [3, 40, 40, 1], dtype=np.uint8)
  native = rng.integers(0, 256, [2, 28, 28, 1], dtype=np.uint8)
  for images in (other, native):
    _served_as_in_memory(reference_dir, images, size)


def test_an_image_folder_trains_at_64(tmp_path):
  rng = np.random.default_rng(0)
  root = tmp_path / 'images'
  for name, value in (('dark', 60), ('light', 190)):
    for i in range(4):
      height, width = rng.integers(20, 80, 2)
      image = np.clip(rng.normal(value, 30, [height, width, 3]), 0, 255).astype(np.uint8)
      path = root / 'labeled' / name / f'{i}.png'
      path.parent.mkdir(parents=True, exist_ok=True)
      tf.io.write_file(str(path), tf.io.encode_png(image))
  (root / 'unlabeled').mkdir()
  model_dir = str(tmp_path / 'run')
  result = runs.run_train(model_dir, _bindings(root, 64, 'image_folder', **{
      'build_ssl_data.num_labeled': None, 'build_ssl_data.validation_size': 0,
      'build_ssl_data.source': "'auto'", 'train.steps': 2, 'train.batch_size': 8}))
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]
  with open(os.path.join(model_dir, 'dataset.json')) as f:
    dataset = json.load(f)
  assert dataset['image_shape'] == [64, 64, 3]
  assert dataset['resize'] == image_rules.resize_rule(64)
  assert runs.restore_run(model_dir).critic.image_size == 64
  images = np.random.default_rng(1).integers(0, 256, [2, 45, 70, 3], dtype=np.uint8)
  _served_as_in_memory(model_dir, images, 64)


def test_bin_train_refuses_a_bad_size_in_one_line_before_writing(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data', num_train=40, num_test=10)
  model_dir = tmp_path / 'run'
  result = runs.run_train(str(model_dir), _bindings(data_dir, 48))
  assert result.returncode == 1 and 'Traceback' not in result.stderr, result.stderr[-3000:]
  assert ('error: build_ssl_data.image_size = 48 is not a size the networks are built for; '
          'use one of 32, 64, 96') in result.stderr
  assert not model_dir.exists()
