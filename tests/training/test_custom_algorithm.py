"""An algorithm registered from inside tests/ (toy_algorithm.py), with no edit of the
library, is a train.mode choice and trains through bin/train with gin lines only; an
algorithm without a generator checkpoints none."""
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs
from tests.training import toy_algorithm
from tf_ipmssl import errors
from tf_ipmssl.objectives import fisher
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import run_config
from tf_ipmssl.training import semi_supervised


def test_registered_algorithm_is_a_mode_while_registered():
  name = toy_algorithm.EntropyMinimization.name
  assert name not in algorithms.registered_names()
  with algorithms.registered(toy_algorithm.EntropyMinimization):
    assert algorithms.registered_names()[:2] == ('ssl', 'supervised')
    config = run_config.RunConfig.create(mode=name, constraints=[fisher.Fisher()], steps=2)
    assert config.objective.algorithm is toy_algorithm.EntropyMinimization
    assert config.objective.constraints == () and config.to_json()['objective'][
        'algorithm'] == name
  assert name not in algorithms.registered_names()
  with pytest.raises(errors.ConfigError, match=r"train.mode = 'entropy_minimization' is not"):
    run_config.RunConfig.create(mode=name, steps=2)


def test_a_second_class_of_a_registered_name_is_refused():
  class Impostor(semi_supervised.SemiSupervised):
    pass

  with pytest.raises(ValueError, match="algorithm named 'ssl' is already registered"):
    algorithms.register(Impostor)
  assert algorithms.registered_names().count('ssl') == 1
  with pytest.raises(TypeError, match='not an Algorithm subclass'):
    algorithms.register(object)


def _variables(model_dir):
  return runs.checkpoint_values(tf.train.latest_checkpoint(os.path.join(model_dir,
                                                                        'checkpoints')))


def test_toy_algorithm_trains_through_bin_train(tmp_path):
  model_dir, result = runs.train_with_gin_lines(
      tmp_path, ['import tests.training.register_toy_algorithm',
                 "train.mode = 'entropy_minimization'"], **{
                     'train.constraints': '[]', 'train.steps': 3, 'train.log_every': 1,
                     'train.export_classifier': False})
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'Training entropy_minimization' in result.stdout
  assert 'step 3/3' in result.stdout
  values = _variables(model_dir)
  assert int(values['step/.ATTRIBUTES/VARIABLE_VALUE']) == 3
  assert not [k for k in values if k.startswith(('generator', 'generator_optimizer'))]
  critic = [k for k in values if k.startswith('critic/') and 'VARIABLE_VALUE' in k]
  assert critic and all(np.all(np.isfinite(values[k])) for k in critic)
