"""A constraint registered from inside tests/ (toy_constraint.py), with no edit of the library,
is listed in the error messages and trains through bin/train with gin lines only."""
import dataclasses
import os

import gin
import numpy as np
import pytest
import tensorflow as tf

from tests.training import runs
from tests.training import toy_constraint
from tf_ipmssl import configurables  # pylint: disable=unused-import
from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint
from tf_ipmssl.objectives import fisher  # pylint: disable=unused-import


def test_registered_constraint_is_listed_as_a_choice():
  assert 'ToyCentering' not in constraint.REGISTRY.names()
  with constraint.REGISTRY.registered(toy_constraint.ToyCentering):
    assert {'Fisher', 'ToyCentering'} <= set(constraint.REGISTRY.names())
    assert constraint.get('ToyCentering') is toy_constraint.ToyCentering
    with pytest.raises(errors.ConfigError,
                       match=r'not a constraint; use one of .*@ToyCentering\(\)'):
      constraint.validate_constraints('kplus1', ['Fisher'])
    gin.parse_config('ToyCentering.penalty_weight = 0.5')
    made = gin.get_configurable('ToyCentering')()
    # gin makes an instance of the plain class, which its bindings do not reach otherwise.
    assert type(made) is toy_constraint.ToyCentering and made.penalty_weight == 0.5
    assert toy_constraint.ToyCentering().penalty_weight == 1e-2
    gin.clear_config()
  # Gone again: from the choices, and gin refuses to build it, in one line naming it.
  assert 'ToyCentering' not in constraint.REGISTRY.names()
  with pytest.raises(errors.ConfigError, match='constraint ToyCentering is not registered'):
    constraint.get('ToyCentering')
  with pytest.raises(errors.ConfigError, match='constraint ToyCentering is not registered'):
    gin.get_configurable('ToyCentering')()
  assert toy_constraint.ToyCentering('f-').name == 'toy_centering_f_neg'


def test_a_second_class_of_a_registered_name_is_refused():
  @dataclasses.dataclass(frozen=True)
  class Fisher(constraint.Constraint):  # pylint: disable=redefined-outer-name
    kind = 'impostor'

  with pytest.raises(ValueError, match="constraint named 'Fisher' is already registered"):
    constraint.register(Fisher)
  assert constraint.REGISTRY.names().count('Fisher') == 1


def test_multiplier_step_is_the_constraints_own():
  """λ ← λ + ρΩ for a multiplier constraint; nothing for one without a multiplier."""
  multiplier = tf.Variable(0.25)
  fisher.Fisher(penalty_weight=1e-6 * 3).update_multiplier(multiplier, tf.constant(-2.0))
  np.testing.assert_allclose(multiplier.numpy(), np.float32(0.25) + np.float32(3e-6 * -2.0))
  toy = toy_constraint.ToyCentering(penalty_weight=0.5)
  toy.update_multiplier(multiplier, tf.constant(4.0))
  np.testing.assert_allclose(multiplier.numpy(), np.float32(0.25 + 3e-6 * -2.0 + 2.0),
                             rtol=1e-6)
  constraint.Constraint().update_multiplier(None, None)  # No multiplier: nothing to do.


def test_toy_constraint_trains_two_steps(tmp_path):
  model_dir, result = runs.train_with_gin_lines(
      tmp_path, ['import tests.training.register_toy_constraint'], **{
          'ssl.constraints': '[@ToyCentering()]', 'train.steps': 2, 'train.log_every': 1,
          'ssl.critic_iterations': 1, 'ssl.constraint_penalty_scale': 1.0,
          'train.export_classifier': False})
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'omega/toy_centering_f' in result.stdout and 'lambda/toy_centering_f' in result.stdout

  values = runs.checkpoint_values(tf.train.latest_checkpoint(os.path.join(model_dir,
                                                                          'checkpoints')))
  multiplier = [v for k, v in values.items()
                if k.startswith('multipliers/toy_centering_f/') and 'VARIABLE_VALUE' in k]
  # λ ← λ + ρΩ after each of the two critic updates (n_c = 1), from 0, with the Ω logged
  # at each step and the toy's ρ = 1e-2, in float32 as the multiplier's variable.
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  scalars = event_files.read_scalars(os.path.join(model_dir, 'train'))
  omegas = [np.float32(v) for _, v in scalars['omega/toy_centering_f']]
  assert len(omegas) == 2 and all(omega != 0 for omega in omegas)
  expected = np.float32(0)
  for omega in omegas:
    expected = np.float32(expected + np.float32(1e-2) * omega)
  assert len(multiplier) == 1
  np.testing.assert_allclose(multiplier[0], expected, rtol=1e-6, atol=1e-12)
  # The after-update hook clipped v (initialised N(0, 0.02), so mostly outside ±0.01).
  v_kernels = [v for k, v in values.items() if k.startswith('critic/v_head/')]
  assert v_kernels and all(np.abs(v).max() <= 0.01 for v in v_kernels)
