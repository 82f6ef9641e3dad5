"""A run is its configuration: two runs are built and stepped side by side in one process,
and a run read from its directory is the same whatever gin bindings the process holds."""
import json
import shutil
import subprocess
import sys
import types

import gin
import numpy as np
import pytest
import tensorflow as tf

from tests import numerics
from tests.training import runs
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
  """The run of `config` and a callable running one of its steps on random data."""
  run = run_lib.Run.build(config, num_classes=10, image_shape=IMAGE_SHAPE)
  algorithm = config.algorithm(run)
  iterators = config.algorithm.streams(
      _data(seed), lambda _, images, labels, offset: iter(pipelines.training_stream(
          images, labels, batch_size=config.train.batch_size, seed=seed + offset)))
  return run, lambda: algorithm.train_step(*iterators)


def test_two_runs_are_built_and_stepped_in_one_process():
  ssl = run_config.RunConfig.create(
      settings=dict(constraints=[fisher.Fisher()], critic_iterations=2), batch_size=8, steps=2,
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
  assert int(ssl_run.state.counters['critic_updates'].numpy()) == 4
  assert int(supervised_run.state.counters['critic_updates'].numpy()) == 2
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
                      'ssl.constraints = [@Fisher()]', 'train.steps = 1',
                      "build_ssl_data.dataset = 'cifar10'"])
    before = gin.config_str()
    config, fake_logit, class_logits = _critic_outputs(model_dir)
    assert gin.config_str() == before  # The process's bindings are as they were.
  finally:
    gin.clear_config()
  assert config == reference[0] and config.mode == 'supervised'
  assert config.build_critic.width == 0.0625 and config.build_critic.normalization == 'none'
  np.testing.assert_array_equal(fake_logit, reference[1])
  np.testing.assert_array_equal(class_logits, reference[2])


# Run in a fresh process: parses a paper cell's gin file and other bindings, then reads the
# run in argv[1] and prints its critic's outputs on fixed inputs and the gin text before and
# after.
_READ_UNDER_OTHER_GIN = """
import json, sys
import gin
import numpy as np
import tensorflow as tf
from tf_ipmssl import configurables
from tf_ipmssl.training import run as run_lib
configurables.parse([sys.argv[2]], ['build_critic.width = 0.5', 'train.seed = 9',
                                        "build_ssl_data.dataset = 'svhn'"])
before = gin.config_str()
run = run_lib.Run.from_model_dir(sys.argv[1])
critic, _ = run.restore_critic('latest', 'trained')
x = tf.constant(np.random.default_rng(0).uniform(-1, 1, (4, 32, 32, 1)), tf.float32)
fake_logit, class_logits = critic(x, training=False)
from tests import numerics
print(json.dumps({'fake_logit': fake_logit.numpy().tolist(),
                  'class_logits': class_logits.numpy().tolist(),
                  'gin_kept': gin.config_str() == before, 'width': run.config.build_critic.width,
                  'record': run.config.to_json(),
                  'computation': numerics.computation(critic)}))
"""


@pytest.mark.numerics
def test_a_run_reads_the_same_in_a_process_with_other_gin_bindings(tmp_path):
  """A run (SSL, Fisher + Sobolev) read by Run.from_model_dir in a process that parsed
  another gin configuration is the run as built: the same configuration, the same weights bit
  for bit; the process's gin is left as it was.

  Its critic's outputs in the two processes: the same computation (the same weights, Grappler
  options and kernels, checked), within float32's rounding of the critic's sums
  (tests/numerics.py), since two processes are not one computation by construction. When
  this test's process had imported TensorFlow before command_line set TF_ENABLE_ONEDNN_OPTS,
  the second process inherited the variable and ran oneDNN's kernels, this one Eigen's: the
  fake logits differed by 2.3e-6 of their value (0.09·eps·sqrt(n) of their terms' sizes), with
  the same weights and Grappler options: the check of the computation below says which."""
  model_dir = test_previous_layout.copy_run(test_previous_layout.VERSION_1, tmp_path)
  record_path = tmp_path / test_previous_layout.VERSION_1.name / 'run_config.json'
  config = run_config.RunConfig.from_json(json.loads(record_path.read_text()))
  record_path.write_text(json.dumps(config.to_json()))  # This version's record.
  run = run_lib.Run.from_model_dir(model_dir)
  critic, _ = run.restore_critic('latest', 'trained')
  x = tf.constant(np.random.default_rng(0).uniform(-1, 1, (4, 32, 32, 1)), tf.float32)
  fake_logit, class_logits = critic(x, training=False)

  cell = runs.REPO_ROOT / 'gin' / 'table1' / 'cifar10_fisher_sobolev_kplus1.gin'
  result = subprocess.run([sys.executable, '-c', _READ_UNDER_OTHER_GIN, model_dir, str(cell)],
                          capture_output=True, text=True, timeout=600, env=runs.environment(),
                          cwd=str(runs.REPO_ROOT))
  assert result.returncode == 0, result.stderr[-3000:]
  other = json.loads(result.stdout.strip().splitlines()[-1])
  assert other['gin_kept'] and other['width'] == 0.0625
  assert other['record'] == config.to_json() == run.config.to_json()
  assert other['computation'] == numerics.computation(critic)
  fake_sizes, class_sizes = numerics.head_term_sizes(critic, x)
  terms = numerics.longest_sum(critic)
  numerics.assert_close_as_float32_sums(other['fake_logit'], fake_logit.numpy(), terms=terms,
                                        term_sizes=fake_sizes, err_msg='fake logit')
  numerics.assert_close_as_float32_sums(other['class_logits'], class_logits.numpy(),
                                        terms=terms, term_sizes=class_sizes,
                                        err_msg='class logits')
