"""Where the critic's update comes from, checkpoint by checkpoint (bin/diagnose).

For each saved checkpoint of a run whose algorithm splits its critic's gradient
(algorithms.Algorithm.splits_critic_gradient: ssl), on a few fixed batches (labeled,
unlabeled, noise) and in training mode (dropout on, as in the update), the gradient of −L_D
on the body Φ's weights is split into its three terms:

  IPM:         −(E_P f − E_Q f)
  CE:          λ_CE · CE(S(Φ(x_l)), y_l)
  constraints: Σ_c (λ_c Ω_c + ρ_c/2 Ω_c²) + λ_GP Ω_GP

The IPM and CE gradients come from the objective with the constraints' weights zeroed
(λ = ρ = λ_GP = 0; λ_CE = 0, then λ_CE as configured); the constraints' is the full gradient
minus those two. The three calls stack the batches the same way and draw the same dropout
masks (the critic's dropout RNG state is rewound before each), so the split is exact.

A term's share is its gradient norm over the sum of the three norms; `cos_ipm_ce` is the
cosine between the IPM and CE gradients (negative: the unlabeled term works against the
labeled one). Also reported: E_P f, E_Q f, CE, Ω and λ per constraint at the checkpoint.
"""
import dataclasses

import numpy as np
import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.data import pipelines
from tf_ipmssl.data import ssl_data
from tf_ipmssl.objectives import critic_objective as critic_objective_lib
from tf_ipmssl.objectives import formulations
from tf_ipmssl.objectives import ipm_rampup
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import random_streams
from tf_ipmssl.training import run as run_lib


def _fixed_batches(data, batch_size, num_batches, noise_dim):
  """num_batches (x_l, y_l, x_p, x_q) drawn once with a fixed seed, shared by all checkpoints."""
  rng = np.random.default_rng(12345)
  b = batch_size
  batches = []
  for i in range(num_batches):
    li = rng.choice(len(data.labeled_labels), b, replace=len(data.labeled_labels) < b)
    ui = rng.choice(len(data.unlabeled_images), b, replace=False)
    x_l = pipelines.to_model_input(tf.constant(data.labeled_images[li]))
    y_l = tf.constant(data.labeled_labels[li])
    x_p = pipelines.to_model_input(tf.constant(data.unlabeled_images[ui]))
    z = tf.random.stateless_normal(
        [b, noise_dim], seed=random_streams.stream_seed(987, random_streams.SAMPLE_NOISE, i),
        alg='philox')
    batches.append((x_l, y_l, x_p, z))
  return batches


def _without_weight(constraint):
  """The constraint with its loss weight (ρ or λ_GP) set to 0: same rows, no loss term."""
  fields = {f.name for f in dataclasses.fields(constraint)}
  zero = {name: 0.0 for name in ('penalty_weight', 'weight') if name in fields}
  return dataclasses.replace(constraint, **zero) if zero else constraint


def _gradient(critic, variables, batch, x_q, config, constraints, lambda_ce, multipliers,
              ipm_weight):
  x_l, y_l, x_p, _ = batch
  settings = config.algorithm_settings
  with tf.GradientTape() as tape:
    result = critic_objective_lib.critic_objective(
        critic, x_l, y_l, x_p, x_q, formulation=settings.formulation,
        constraints=constraints, multipliers=multipliers, lambda_ce=lambda_ce,
        global_batch_size=config.train.batch_size,
        reference_pairwise_f=settings.reference_pairwise_f, training=True,
        ipm_weight=ipm_weight)
  return tape.gradient(result.surrogate_loss, variables), result.values


def _flat(grads):
  return np.concatenate([g.numpy().ravel() for g in grads if g is not None])


def diagnose_checkpoint(critic, generator, multipliers, batches, config, critic_updates=0):
  """The gradient split and the critic's values at the restored weights (see module doc);
  `config` is the run's RunConfig.

  With the run's IPM ramp-up, the IPM term is weighted as the run weighted it at the next
  critic update (`critic_updates` updates done): w = ipm_rampup.rampup_weight, reported as
  'ipm_weight'.
  """
  settings = config.algorithm_settings
  ipm_weight = ipm_rampup.rampup_weight(critic_updates, settings.ipm_rampup_updates)
  variables = critic.body.trainable_variables
  zeroed = tuple(_without_weight(c) for c in config.constraints)
  zero_multipliers = {k: 0.0 for k in multipliers}
  states = {k: v.numpy() for k, v in critic.dropout_rng.states.items()}
  rows = []
  for batch in batches:
    x_q = tf.cast(generator(batch[3], training=True), tf.float32)
    outs = []
    for constraints, lambda_ce, lambdas in (
        (zeroed, 0.0, zero_multipliers), (zeroed, settings.lambda_ce, zero_multipliers),
        (config.constraints, settings.lambda_ce, multipliers)):
      for k, v in critic.dropout_rng.states.items():
        v.assign(states[k])
      grads, values = _gradient(critic, variables, batch, x_q, config, constraints,
                                lambda_ce, lambdas, ipm_weight)
      outs.append((_flat(grads), values))
    g_ipm, (g_ipm_ce, values) = outs[0][0], (outs[1][0], outs[2][1])
    g_ce = g_ipm_ce - g_ipm
    g_con = outs[2][0] - g_ipm_ce
    norms = [float(np.linalg.norm(g)) for g in (g_ipm, g_ce, g_con)]
    fake_logit, class_logits = critic(batch[2], training=False)
    f_real = formulations.critic_outputs(
        fake_logit, class_logits, settings.formulation).f
    fake_logit, class_logits = critic(x_q, training=False)
    f_fake = formulations.critic_outputs(
        fake_logit, class_logits, settings.formulation).f
    row = {'grad_norm/ipm': norms[0], 'grad_norm/ce': norms[1], 'grad_norm/constraints': norms[2],
           'cos_ipm_ce': float(g_ipm @ g_ce / max(norms[0] * norms[1], 1e-30)),
           'mean_f_real': float(tf.reduce_mean(f_real)),
           'mean_f_fake': float(tf.reduce_mean(f_fake)),
           'ce': float(values['ce']),
           'ipm_weight': 1.0 if ipm_weight is None else float(ipm_weight)}
    row.update({k: float(v) for k, v in values.items() if k.startswith('omega/')})
    rows.append(row)
  out = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
  total = out['grad_norm/ipm'] + out['grad_norm/ce'] + out['grad_norm/constraints']
  for term in ('ipm', 'ce', 'constraints'):
    out[f'share/{term}'] = out[f'grad_norm/{term}'] / max(total, 1e-30)
  out.update({f'lambda/{k}': float(v.numpy()) for k, v in multipliers.items()})
  return out


def diagnose_run(model_dir, num_batches=4):
  """One dict per checkpoint in model_dir/checkpoints (step order), plus the step.

  The run is rebuilt from its run_config.json; the process's gin configuration is not used.
  """
  run = run_lib.Run.from_model_dir(model_dir)
  if not run.config.algorithm.splits_critic_gradient:
    splitting = [name for name in algorithms.REGISTRY.names()
                 if algorithms.get_algorithm(name).splits_critic_gradient]
    raise errors.UserError(f'{model_dir} is a {run.config.mode} run: its algorithm has no IPM '
                           f'term to split (bin/diagnose splits runs of {splitting})')
  data = ssl_data.build_ssl_data(run.config.build_ssl_data)
  state = tf.train.get_checkpoint_state(run.manager.directory)
  if state is None:
    raise errors.UserError(f'no checkpoints in {run.manager.directory}; train first '
                           '(bin/train)')
  paths = sorted(state.all_model_checkpoint_paths, key=lambda p: int(p.rsplit('-', 1)[1]))
  batches = _fixed_batches(data, run.config.train.batch_size, num_batches,
                           run.generator.noise_dim)
  results = []
  for path in paths:
    run.restore(path)
    row = diagnose_checkpoint(run.critic, run.generator, run.state.multipliers, batches,
                              run.config, int(run.state.counters['critic_updates'].numpy()))
    row['step'] = int(path.rsplit('-', 1)[1])
    results.append(row)
  return results
