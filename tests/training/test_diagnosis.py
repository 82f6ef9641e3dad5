"""bin/diagnose's gradient split against gradients of each term written out directly."""
import math
import types

import numpy as np
import pytest
import tensorflow as tf

from tf_ipmssl import diagnosis
from tf_ipmssl import errors
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import fisher
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config

pytestmark = pytest.mark.numerics

B = 8


@pytest.mark.parametrize('rampup_updates,critic_updates', [(None, 0), (600, 150)])
def test_split_equals_each_term_s_own_gradient(rampup_updates, critic_updates):
  """Also for a run with the IPM ramp-up: the IPM term is w(t)·(its own gradient), with w
  computed here from the formula exp(−5 (1 − t/T)²) at t = the checkpoint's critic updates."""
  # Dropout off so that the direct gradients below see the same network.
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=0.125, input_dropout=0.0,
                                                          dropout=0.0),
                                   10, 1, seed=0)
  generator = generator_lib.build_generator(generator_lib.BuildGenerator(ngf=8), output_channels=1,
                                            seed=0)
  rng = np.random.default_rng(0)
  x_l = tf.constant(rng.uniform(-1, 1, [B, 32, 32, 1]), tf.float32)
  y_l = tf.constant(rng.integers(0, 10, B))
  x_p = tf.constant(rng.uniform(-1, 1, [B, 32, 32, 1]), tf.float32)
  z = tf.constant(rng.normal(size=[B, generator.noise_dim]), tf.float32)
  lam, rho, lambda_ce = 0.7, 0.3, 1.5
  config = run_config.RunConfig.create(
      settings=dict(formulation='kplus1',
                    constraints=(fisher.Fisher(component='f', penalty_weight=rho),),
                    lambda_ce=lambda_ce, ipm_rampup_updates=rampup_updates),
      batch_size=B, steps=1)
  multipliers = {'fisher_f': tf.Variable(lam)}
  row = diagnosis.diagnose_checkpoint(critic, generator, multipliers, [(x_l, y_l, x_p, z)],
                                      config, critic_updates)
  w = 1.0 if rampup_updates is None else math.exp(-5 * (1 - critic_updates / rampup_updates)**2)
  assert row['ipm_weight'] == pytest.approx(w, rel=1e-6)

  x_q = tf.cast(generator(z, training=True), tf.float32)
  variables = critic.body.trainable_variables

  def f(x):
    fake_logit, logits = critic(x, training=True)
    p = tf.nn.softmax(logits)
    return tf.reduce_sum(p * logits, -1) - fake_logit

  def norm(loss_fn):
    with tf.GradientTape() as tape:
      loss = loss_fn()
    return float(tf.linalg.global_norm(tape.gradient(loss, variables)))

  ipm = norm(lambda: -w * (tf.reduce_mean(f(x_p)) - tf.reduce_mean(f(x_q))))
  ce = norm(lambda: lambda_ce * tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(y_l, tf.int32), logits=critic(x_l, training=True)[1])))

  def constraint_term():
    omega = 0.5 * tf.reduce_mean(f(x_p)**2) + 0.5 * tf.reduce_mean(f(x_q)**2) - 1.0
    return lam * omega + 0.5 * rho * omega**2
  constraints = norm(constraint_term)
  np.testing.assert_allclose(
      [row['grad_norm/ipm'], row['grad_norm/ce'], row['grad_norm/constraints']],
      [ipm, ce, constraints], rtol=2e-3)
  assert abs(row['share/ipm'] + row['share/ce'] + row['share/constraints'] - 1) < 1e-9
  np.testing.assert_allclose(row['mean_f_real'], float(tf.reduce_mean(f(x_p))), rtol=1e-4)
  assert row['lambda/fisher_f'] == np.float32(lam)


def test_run_config_applies_the_constraint_penalty_scale():
  """bin/diagnose splits the gradient of the ρ the run trained with (the run's RunConfig,
  the trainer's own): the bound ρ times ssl.constraint_penalty_scale (a preset's
  scaling), not the bound ρ alone."""
  import gin  # pylint: disable=g-import-not-at-top
  from tf_ipmssl import configurables  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  try:
    gin.parse_config(['ssl.constraints = [@Fisher(), @Sobolev()]',
                      "Sobolev.component = 'f_neg'", 'Fisher.penalty_weight = 1e-7',
                      'Sobolev.penalty_weight = 1e-8',
                      'ssl.constraint_penalty_scale = 1000.0', 'train.steps = 1'])
    config = configurables.run_config()
  finally:
    gin.clear_config()
  assert [c.penalty_weight for c in config.constraints] == [1e-7 * 1000.0, 1e-8 * 1000.0]


def test_bin_diagnose_reports_the_rampup_weight_of_each_checkpoint(tmp_path):
  """On a real run with ssl.ipm_rampup_updates = 6 (n_c = 2): the checkpoint after step s
  has made 2s critic updates, so its IPM weight is exp(−5 (1 − 2s/6)²), 1 from step 3 on."""
  import json  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  from tests.training import runs  # pylint: disable=g-import-not-at-top
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = str(tmp_path / 'run')
  result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **{
      'train.steps': 4, 'train.checkpoint_every': 1, 'train.keep_checkpoints': 4,
      'ssl.ipm_rampup_updates': 6, 'train.export_classifier': False}))
  assert result.returncode == 0, result.stderr
  diagnose = runs.run_program('diagnose', f'--model_dir={model_dir}', '--num_batches=1',
                              timeout=600)
  assert diagnose.returncode == 0, diagnose.stderr
  with open(os.path.join(model_dir, 'diagnosis.json')) as f:
    rows = json.load(f)['checkpoints']
  assert [r['step'] for r in rows] == [1, 2, 3, 4]
  expected = [math.exp(-5 * (1 - min(2 * s / 6, 1.0))**2) for s in (1, 2, 3, 4)]
  assert [r['ipm_weight'] for r in rows] == pytest.approx(expected, rel=1e-6)
  assert 'ipm weight 0.574' in diagnose.stdout  # Step 2: exp(−5/9).


def test_a_run_whose_algorithm_does_not_split_its_gradient_is_refused(monkeypatch):
  """bin/diagnose asks the run's algorithm (splits_critic_gradient): a supervised run is
  refused in one line naming the algorithms it splits."""
  config = run_config.RunConfig.create(mode='supervised', steps=1)
  monkeypatch.setattr(run_lib.Run, 'from_model_dir',
                      classmethod(lambda cls, model_dir: types.SimpleNamespace(config=config)))
  with pytest.raises(errors.UserError, match=r"^RUN is a supervised run: its algorithm has no "
                     r"IPM term to split \(bin/diagnose splits runs of \['ssl'\]\)$"):
    diagnosis.diagnose_run('RUN')
