"""A run is its configuration: two runs are built and stepped side by side in one process,
and a run read from its directory is the same whatever gin bindings the process holds."""
import shutil
import types

import gin
import numpy as np
import tensorflow as tf

from tests.training import test_previous_layout
from tf_ipmssl import configurables  # pylint: disable=unused-import
from tf_ipmssl.data import pipelines
from tf_ipmssl.objectives import fisher
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config

IMAGE_SHAPE = (28, 28, 1)


def _data(seed):
  rng = np.random.default_rng(seed)
  images = rng.integers(0, 256, size=(32, *IMAGE_SHAPE), dtype=np.uint8)
  return types.SimpleNamespace(labeled_images=images[:16],
                               labeled_labels=rng.integers(0, 10, 16).astype(np.int64),
                               unlabeled_images=images)


def _stepper(config, seed):
  """The run of `config` and a callable running one of its iterations on random data."""
  run = run_lib.Run.build(config, num_classes=10, image_shape=IMAGE_SHAPE)
  steps = run.training_steps()
  iterators = config.objective.algorithm.streams(_data(seed), lambda images, labels, offset: iter(
      pipelines.training_stream(images, labels, batch_size=config.loop.batch_size,
                                seed=seed + offset)))
  return run, lambda: steps.iteration(*iterators)


def test_two_runs_are_built_and_stepped_in_one_process():
  ssl = run_config.RunConfig.create(
      constraints=[fisher.Fisher()], batch_size=8, critic_iterations=2, steps=2,
      critic={'width': 0.0625}, generator={'ngf': 4, 'noise_dim': 8})
  supervised = run_config.RunConfig.create(
      mode='supervised', batch_size=4, steps=2, seed=3,
      critic={'width': 0.125, 'normalization': 'layer_norm'})
  (ssl_run, ssl_step), (supervised_run, supervised_step) = (
      _stepper(ssl, 0), _stepper(supervised, 1))
  for _ in range(2):
    ssl_values = ssl_step()
    supervised_values = supervised_step()
  assert 'generator_loss' in ssl_values and 'generator_loss' not in supervised_values
  assert all(np.isfinite(float(v)) for v in {**ssl_values, **supervised_values}.values())
  assert int(ssl_run.state.counters['critic_iteration'].numpy()) == 4
  assert int(supervised_run.state.counters['critic_iteration'].numpy()) == 2
  # Each run's networks are its own configuration's.
  assert ssl_run.critic.s_head.kernel.shape[0] * 2 == supervised_run.critic.s_head.kernel.shape[0]
  assert ssl_run.generator.noise_dim == 8 and supervised_run.generator is None


def _critic_outputs(model_dir):
  run = run_lib.Run.from_model_dir(model_dir)
  critic, _ = run.restore_critic('latest', 'trained')
  x = tf.constant(np.random.default_rng(0).uniform(-1, 1, (4, 32, 32, 1)), tf.float32)
  fake_logit, class_logits = critic(x, training=False)
  return run.config, fake_logit.numpy(), class_logits.numpy()


def test_from_model_dir_ignores_and_keeps_the_process_gin_configuration(tmp_path):
  model_dir = str(tmp_path / 'run')
  shutil.copytree(test_previous_layout.PREVIOUS, model_dir)
  gin.clear_config()
  try:
    reference = _critic_outputs(model_dir)
    assert gin.config_str() == ''  # Reading the run left no binding behind.
    gin.parse_config(['build_critic.width = 0.5', "build_critic.normalization = 'layer_norm'",
                      'build_critic.leaky_relu_slope = 0.5', "train.mode = 'ssl'",
                      'train.constraints = [@Fisher()]', 'train.steps = 1',
                      "build_ssl_data.dataset = 'cifar10'"])
    before = gin.config_str()
    config, fake_logit, class_logits = _critic_outputs(model_dir)
    assert gin.config_str() == before  # The process's bindings are as they were.
  finally:
    gin.clear_config()
  assert config == reference[0] and config.mode == 'supervised'
  assert config.critic['width'] == 0.0625 and config.critic['normalization'] == 'none'
  np.testing.assert_array_equal(fake_logit, reference[1])
  np.testing.assert_array_equal(class_logits, reference[2])
