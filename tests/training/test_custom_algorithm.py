"""An algorithm registered from inside tests/ (toy_algorithm.py), with no edit of the
library, is a train.mode choice with a setting of its own (entropy_minimization.beta) and
trains through bin/train with gin lines only, its setting recorded in run_config.json and the
HParams; an algorithm without a generator checkpoints none."""
import dataclasses
import json
import os

from google.protobuf import json_format
import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs
from tests.training import toy_algorithm
from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config
from tf_ipmssl.training import semi_supervised
from tf_ipmssl.training import tensorboard as tensorboard_lib


def test_registered_algorithm_is_a_mode_while_registered():
  name = toy_algorithm.EntropyMinimization.name
  assert name not in algorithms.REGISTRY.names()
  with algorithms.REGISTRY.registered(toy_algorithm.EntropyMinimization):
    assert algorithms.REGISTRY.names()[:2] == ('ssl', 'supervised')
    config = run_config.RunConfig.create(mode=name, steps=2)
    assert config.algorithm is toy_algorithm.EntropyMinimization
    assert config.algorithm_settings.beta == 0.3  # Its default.
    assert config.constraints == () and config.to_json()['train']['mode'] == name
    with pytest.raises(errors.ConfigError,
                       match=r'entropy_minimization.beta must be a number >= 0'):
      run_config.RunConfig.create(mode=name, steps=2, settings={'beta': -1.0})
  assert name not in algorithms.REGISTRY.names()
  with pytest.raises(errors.ConfigError, match=r"train.mode = 'entropy_minimization' is not"):
    run_config.RunConfig.create(mode=name, steps=2)


def test_settings_must_be_a_frozen_dataclass_with_defaults():
  class Unfrozen(toy_algorithm.EntropyMinimization):
    name = 'unfrozen'

    @dataclasses.dataclass
    class Settings:
      beta: float = 0.3

  class NoDefault(toy_algorithm.EntropyMinimization):
    name = 'no_default'

    @dataclasses.dataclass(frozen=True)
    class Settings:
      beta: float

  for cls in (Unfrozen, NoDefault):
    with pytest.raises(TypeError, match='Settings is not a frozen dataclass whose fields'):
      algorithms.register(cls)
    assert cls.name not in algorithms.REGISTRY.names()


@pytest.mark.numerics
def test_the_setting_weights_the_entropy_term():
  """β is what the toy's update uses: its critic gradient is CE's plus β times the entropy's
  (linear in β, and not the same for β = 0 and 1), on one batch with the same dropout."""
  rng = np.random.default_rng(0)
  x_labeled = tf.constant(rng.uniform(-1, 1, (8, 32, 32, 3)), tf.float32)
  y_labeled = tf.constant(rng.integers(0, 10, 8), tf.int32)
  x_unlabeled = tf.constant(rng.uniform(-1, 1, (8, 32, 32, 3)), tf.float32)
  grads = {}
  with algorithms.REGISTRY.registered(toy_algorithm.EntropyMinimization):
    for beta in (0.0, 1.0, 0.7):
      config = run_config.RunConfig.create(mode=toy_algorithm.EntropyMinimization.name,
                                           steps=1, batch_size=8, settings={'beta': beta},
                                           critic={'width': 0.0625})
      tf.keras.utils.set_random_seed(0)
      run = run_lib.Run.build(config, num_classes=10, image_shape=(32, 32, 3))
      steps = config.algorithm(run)
      assert steps.settings.beta == beta
      gradients = steps._gradients_impl(x_labeled, y_labeled, x_unlabeled)[0]  # pylint: disable=protected-access
      grads[beta] = np.concatenate([g.numpy().ravel() for g in gradients])
  entropy_grad = grads[1.0] - grads[0.0]
  assert np.linalg.norm(entropy_grad) > 1e-3 * np.linalg.norm(grads[0.0])
  np.testing.assert_allclose(grads[0.7], grads[0.0] + 0.7 * entropy_grad, rtol=1e-4,
                             atol=1e-6 * np.abs(grads[0.0]).max())


def test_a_train_step_that_is_not_a_tf_function_is_refused():
  class Eager(toy_algorithm.EntropyMinimization):
    name = 'eager'

    def train_step(self, labeled_iterator, unlabeled_iterator):
      return {}

  with pytest.raises(TypeError, match=r'Eager.train_step is not a tf.function'):
    algorithms.register(Eager)
  assert 'eager' not in algorithms.REGISTRY.names()


def test_a_second_class_of_a_registered_name_is_refused():
  class Impostor(semi_supervised.SemiSupervised):
    pass

  with pytest.raises(ValueError, match="algorithm named 'ssl' is already registered"):
    algorithms.register(Impostor)
  assert algorithms.REGISTRY.names().count('ssl') == 1
  with pytest.raises(TypeError, match='not an Algorithm subclass'):
    algorithms.register(object)


def _session_hparams(model_dir):
  """The hyperparameters of the HParams session in model_dir/hparams/ (its event file)."""
  from tensorboard.plugins.hparams import metadata  # pylint: disable=g-import-not-at-top
  logdir = os.path.join(model_dir, run_files.HPARAMS_DIR)
  (events,) = os.listdir(logdir)
  for event in tf.compat.v1.train.summary_iterator(os.path.join(logdir, events)):
    for value in event.summary.value:
      if value.tag == metadata.SESSION_START_INFO_TAG:
        info = metadata.parse_session_start_info_plugin_data(
            value.metadata.plugin_data.content)
        return {name: json.loads(json_format.MessageToJson(v))
                for name, v in info.hparams.items()}
  raise AssertionError(f'no HParams session in {logdir}')


def _variables(model_dir):
  return runs.checkpoint_values(tf.train.latest_checkpoint(os.path.join(model_dir,
                                                                        'checkpoints')))


def test_toy_algorithm_trains_through_bin_train(tmp_path):
  model_dir, result = runs.train_with_gin_lines(
      tmp_path, ['import tests.training.register_toy_algorithm',
                 "train.mode = 'entropy_minimization'", 'entropy_minimization.beta = 0.7'],
      **{'train.steps': 3, 'train.log_every': 1, 'train.export_classifier': False})
  assert result.returncode == 0, result.stderr[-3000:]
  # The setting as bound, in run_config.json (and nothing of ssl's), and in the HParams the
  # run wrote.
  record = run_files.read_json(model_dir, run_files.RUN_CONFIG_FILE)
  assert record['entropy_minimization'] == {'beta': 0.7}
  assert 'ssl' not in record
  assert _session_hparams(model_dir)['entropy_minimization.beta'] == 0.7
  assert tensorboard_lib.hparams_of(record, [])['entropy_minimization.beta'] == 0.7
  with algorithms.REGISTRY.registered(toy_algorithm.EntropyMinimization):
    rebuilt = run_config.RunConfig.from_json(record)
  assert rebuilt.algorithm_settings == toy_algorithm.EntropyMinimization.Settings(beta=0.7)
  assert 'Training entropy_minimization' in result.stdout
  assert 'step 3/3' in result.stdout
  values = _variables(model_dir)
  assert int(values['step/.ATTRIBUTES/VARIABLE_VALUE']) == 3
  assert not [k for k in values if k.startswith(('generator', 'generator_optimizer'))]
  critic = [k for k in values if k.startswith('critic/') and 'VARIABLE_VALUE' in k]
  assert critic and all(np.all(np.isfinite(values[k])) for k in critic)
  # Its setting reaches its loss: with β = 0 (the labeled cross-entropy alone) the same run
  # ends with other weights, and the entropy it logs is the same quantity either way.
  (tmp_path / 'beta0').mkdir()
  other_dir, other = runs.train_with_gin_lines(
      tmp_path / 'beta0', ['import tests.training.register_toy_algorithm',
                           "train.mode = 'entropy_minimization'",
                           'entropy_minimization.beta = 0.0'],
      **{'train.steps': 3, 'train.log_every': 1, 'train.export_classifier': False})
  assert other.returncode == 0, other.stderr[-3000:]
  other_values = _variables(other_dir)
  assert any(not np.array_equal(other_values[k], values[k]) for k in critic)
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  first = [event_files.read_scalars(os.path.join(d, 'train'))['entropy'][0]
           for d in (model_dir, other_dir)]
  assert first[0][0] == first[1][0] == 1 and first[0][1] == pytest.approx(first[1][1], rel=1e-6)
