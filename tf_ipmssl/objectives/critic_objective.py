"""The critic's objective (docs/algorithm.md#critic-objective).

The critic maximises

  L_D = E_P[f] − E_Q[f] − Σ_c (λ_c Ω_c + ρ_c/2 Ω_c²) − λ_GP Ω_GP − λ_CE · CE(S(Φ(x_l)), y_l)

over one labeled batch (x_l, y_l), one unlabeled real batch x_p and one generated batch x_q;
we minimise −L_D. Every expectation is over the global batch (`global_moments.py`).

Without batch norm the critic sees the labeled, real, generated (and GP interpolate) batches
stacked: each example's output depends on that example only, so this is the same
computation as separate passes, done as larger matmuls. The rows whose input gradient a
constraint needs form one stacked call (watched by the inner tape) and the other rows
another, so that the double backward of Sobolev/GP runs over those rows only (the speed-up
is measured in docs/performance.md, "What each option gained"). With batch norm the batches
go through separate passes, so each gets its own statistics. The `forward` argument
chooses between the two explicitly ('auto' follows the critic's `has_batch_norm`).
"""
import dataclasses
from typing import Callable, Mapping, Optional, Sequence

import tensorflow as tf

from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint as constraint_lib
from tf_ipmssl.objectives import formulations
from tf_ipmssl.objectives import global_moments
from tf_ipmssl.objectives import gradient_penalty

_LABELED = 'labeled'
_REAL, _FAKE, _INTERP = constraint_lib.REAL, constraint_lib.FAKE, constraint_lib.INTERPOLATES

# How the batches go through the critic: 'batched' (stacked calls), 'separate' (one call per
# batch) or 'auto' (separate iff the critic has batch norm).
FORWARD_MODES = ('auto', 'batched', 'separate')


def is_batched(critic, forward='auto') -> bool:
  """Whether `critic_objective` stacks the batches into shared critic calls.

  Raises ValueError for an unknown mode, and for 'batched' with a batch-norm critic: batch
  norm needs one pass per batch, so that each batch gets its own statistics.
  """
  if forward not in FORWARD_MODES:
    raise ValueError(f'unknown critic forward mode {forward!r}; use one of '
                     f'{list(FORWARD_MODES)}')
  has_batch_norm = bool(getattr(critic, 'has_batch_norm', False))
  if forward == 'batched' and has_batch_norm:
    raise ValueError("forward='batched' stacks the batches into shared critic calls, but "
                     'this critic has batch norm, which needs one pass per batch (its own '
                     "statistics); use forward='auto' or 'separate'")
  return forward == 'batched' or (forward == 'auto' and not has_batch_norm)


@dataclasses.dataclass
class ObjectiveResult:
  """surrogate_loss: what this replica minimises (its gradients sum to ∇(−L_D));
  values: scalars for logging, over the global batch; omegas: Ω per multiplier constraint."""
  surrogate_loss: tf.Tensor
  values: dict
  omegas: dict


def critic_objective(
    critic,
    x_labeled: tf.Tensor,
    y_labeled: tf.Tensor,
    x_real: tf.Tensor,
    x_fake: tf.Tensor,
    *,
    formulation: str,
    constraints: Sequence[constraint_lib.Constraint],
    multipliers: Mapping[str, tf.Variable],
    lambda_ce: float,
    global_batch_size: int,
    reference_pairwise_f: bool = False,
    alpha_seed: Optional[tf.Tensor] = None,
    all_reduce_sum: Callable = global_moments.identity_all_reduce,
    training: bool = True,
    ipm_weight: Optional[tf.Tensor] = None,
    forward: str = 'auto',
) -> ObjectiveResult:
  """Evaluates −L_D for one replica's slice of the global batch.

  Args:
    critic: callable x -> (v·Φ(x) [B], S(Φ(x)) [B, K]) with a `has_batch_norm` attribute.
    x_labeled, y_labeled, x_real, x_fake: this replica's batches (x_fake without gradient
      to the generator).
    formulation: 'plain', 'kplus1' or 'kplus1_entropy' (docs/algorithm.md#formulations).
    constraints: Constraint instances (Fisher, Sobolev, GradientPenalty, WeightClipping, …);
      each supplies its own moments, Ω and loss term (constraint.py).
    multipliers: λ per multiplier constraint, keyed by constraint name.
    lambda_ce: weight of the labeled cross-entropy.
    global_batch_size: B of each of the three batches over all replicas.
    reference_pairwise_f: reproduce the released code's [B, B] broadcast f
      (docs/algorithm.md#pairwise-f): Fisher
      on f becomes the all-pairs mean, input gradients of f are scaled by B. Only the K+1
      formulations broadcast (there f = f+ − f-); 'plain' f is per-sample either way.
    alpha_seed: stateless seed [2] for the GP interpolation weights.
    all_reduce_sum: sums a dict of tensors over replicas (identity on one device).
    ipm_weight: None (the paper), or a scalar w multiplying the IPM term of the loss,
      −w·(E_P f − E_Q f): the ramp-up of `ipm_rampup.py`. The logged 'ipm' is unweighted.
    forward: 'auto' (separate passes iff `critic.has_batch_norm`), 'batched' (stacked critic
      calls; not with batch norm) or 'separate' (one critic call per batch); see `is_batched`.
  """
  constraints = constraint_lib.validate_constraints(formulation, constraints)
  batched = is_batched(critic, forward)
  # The released code's [B, B] f comes from f+ [B] − v·Φ [B, 1]; its plain f is v·Φ alone.
  pairwise_f = reference_pairwise_f and formulation != 'plain'
  inputs = {_LABELED: x_labeled, _REAL: x_real, _FAKE: x_fake}
  interpolates = _interpolates(x_real, x_fake, constraints, alpha_seed)
  if interpolates is not None:
    inputs[_INTERP] = interpolates
  raw, outputs, input_grads = _forward(critic, inputs, constraints, formulation, batched,
                                       training, global_batch_size, pairwise_f)
  # Moments, λ and B take the critic's dtype (float32 in training, float64 in gradient checks).
  dtype = raw[_REAL][0].dtype
  b = tf.cast(global_batch_size, dtype)
  m = _local_moments(raw, outputs, y_labeled, constraints, input_grads, b, pairwise_f)
  lambdas = {name: tf.stop_gradient(
      tf.cast(tf.convert_to_tensor(v, dtype_hint=dtype), dtype))
             for name, v in multipliers.items()}
  objective = _objective_fn(constraints, lambdas, lambda_ce, ipm_weight)
  surrogate, _, (values, omegas) = global_moments.objective_of_global_moments(
      m, objective, all_reduce_sum)
  return ObjectiveResult(surrogate_loss=surrogate, values=values, omegas=omegas)


def labeled_cross_entropy(class_logits, labels, global_batch_size):
  """CE(S(Φ(x_l)), y_l) and the accuracy of a replica's labeled batch, each summed over the
  replica's examples and divided by the global batch size (so that their sum over the
  replicas is the global batch's mean), in the logits' dtype.

  The CE of the critic objective's λ_CE term, and the loss of the supervised baseline
  (supervised.py).

  Args:
    class_logits: S(Φ(x_l)), [B_replica, K].
    labels: y_l, [B_replica] integers.
    global_batch_size: B over all replicas (a number or a scalar tensor).
  """
  labels = tf.cast(labels, tf.int32)
  b = tf.cast(global_batch_size, class_logits.dtype)
  ce = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=class_logits)) / b
  correct = tf.equal(tf.argmax(class_logits, axis=-1, output_type=tf.int32), labels)
  accuracy = tf.reduce_sum(tf.cast(correct, class_logits.dtype)) / b
  return ce, accuracy


def _interpolates(x_real, x_fake, constraints, alpha_seed):
  """The gradient penalties' interpolates between real and generated batches, or None."""
  gp_constraints = [c for c in constraints if c.needs_gradients_at_interpolates]
  if not gp_constraints:
    return None
  per_example = {c.per_example_alpha for c in gp_constraints}
  if len(per_example) > 1:
    raise errors.ConfigError('all gradient penalties must draw α the same way: bind the '
                             'same `per_example_alpha` on every @GradientPenalty()')
  seed = alpha_seed if alpha_seed is not None else tf.constant([0, 0], tf.int32)
  alpha = gradient_penalty.interpolation_weights(tf.shape(x_real)[0], seed,
                                                 per_example=per_example.pop(),
                                                 dtype=x_real.dtype)
  return gradient_penalty.interpolates(x_real, x_fake, alpha)


def _forward(critic, inputs, constraints, formulation, batched, training, global_batch_size,
             pairwise_f):
  """The critic on every batch, and the input gradients ∇_x h the constraints need.

  Returns (raw (v·Φ, S(Φ)) per batch, CriticOutputs per batch, {component: {row: ∇_x h}}).
  """
  # Components whose input gradients are needed (at data points and/or interpolates).
  grad_components = sorted({c.component for c in constraints
                            if c.needs_gradients_at_data or c.needs_gradients_at_interpolates})
  # The inner tape only needs input gradients: it watches inputs, never the weights.
  with tf.GradientTape(persistent=len(grad_components) > 1,
                       watch_accessed_variables=False) as inner:
    if batched:
      raw, grad_stack = _batched_calls(critic, inputs, constraints, inner, training)
    else:
      if grad_components:
        inner.watch([x for name, x in inputs.items() if name != _LABELED])
      raw = {name: critic(x, training=training) for name, x in inputs.items()}
    outputs = {n: formulations.critic_outputs(fake_logit, class_logits, formulation)
               for n, (fake_logit, class_logits) in raw.items()}
    targets = {}
    for component in grad_components:
      rows = set().union(*[c.gradient_rows() for c in constraints if c.component == component])
      targets[component] = (sorted(rows), tf.add_n(
          [tf.reduce_sum(outputs[r].component(component)) for r in sorted(rows)]))

  input_grads = {}
  for component, (rows, target) in targets.items():
    sources = [grad_stack[0]] if batched else [inputs[r] for r in rows]
    grads = inner.gradient(target, sources)
    if batched:
      split = dict(zip(grad_stack[1], tf.split(grads[0], grad_stack[2])))
      grads = [split[r] for r in rows]
    if pairwise_f and component == 'f':
      # ∂/∂x_k Σ_ij (f+(x_j) − f-(x_i)) = B·∇f(x_k): the released code's broadcast f.
      grads = [tf.cast(global_batch_size, g.dtype) * g for g in grads]
    input_grads[component] = dict(zip(rows, grads))
  del inner
  return raw, outputs, input_grads


def _batched_calls(critic, inputs, constraints, tape, training):
  """Two stacked critic calls: the rows whose input gradient a constraint needs (watched by
  `tape`), and the rest. The double backward of Sobolev/GP then runs over those rows only.

  Returns (raw outputs per batch, (watched stack, its batch names, their sizes) or None).
  """
  grad_rows = set().union(*[c.gradient_rows() for c in constraints])
  grad_group = [n for n in inputs if n in grad_rows]
  raw, grad_stack = {}, None
  for group in ([n for n in inputs if n not in grad_rows], grad_group):
    if not group:
      continue
    sizes = [tf.shape(inputs[n])[0] for n in group]
    stacked = tf.concat([inputs[n] for n in group], axis=0)
    if group is grad_group:
      tape.watch(stacked)
      grad_stack = (stacked, grad_group, sizes)
    fake_logit, class_logits = critic(stacked, training=training)
    raw.update(zip(group, zip(tf.split(fake_logit, sizes), tf.split(class_logits, sizes))))
  return raw, grad_stack


def _local_moments(raw, outputs, y_labeled, constraints, input_grads, b, pairwise_f):
  """Replica-local contributions to every global mean (local sum / global batch size)."""
  m = {
      'mean_f_real': tf.reduce_sum(outputs[_REAL].f) / b,
      'mean_f_fake': tf.reduce_sum(outputs[_FAKE].f) / b,
  }
  m['ce'], m['labeled_accuracy'] = labeled_cross_entropy(raw[_LABELED][1], y_labeled, b)
  for c in constraints:
    m.update(c.local_moments(constraint_lib.ConstraintInputs(
        outputs={_REAL: outputs[_REAL], _FAKE: outputs[_FAKE]},
        input_gradients=input_grads.get(c.component, {}), global_batch_size=b,
        pairwise_f=pairwise_f)))
  return m


def _objective_fn(constraints, lambdas, lambda_ce, ipm_weight):
  """−L_D as a function of the global moments: (loss, (logged values, Ω per multiplier))."""
  def objective(gm):
    ipm = gm['mean_f_real'] - gm['mean_f_fake']
    loss = (-ipm if ipm_weight is None else -tf.cast(ipm_weight, ipm.dtype) * ipm)
    loss += lambda_ce * gm['ce']
    values = {'ipm': ipm, 'ce': gm['ce'], 'labeled_accuracy': gm['labeled_accuracy']}
    omegas = {}
    for c in constraints:
      omega = c.omega(gm)
      if omega is None:  # e.g. weight clipping, which acts after the update.
        continue
      multiplier = None
      if c.has_multiplier:
        if c.name not in lambdas:
          raise KeyError(f'no multiplier for constraint {c.name}')
        multiplier = lambdas[c.name]
        omegas[c.name] = omega
      term = c.penalty(omega, multiplier)
      if term is not None:
        loss += term
      values[f'omega/{c.name}'] = omega
    values['critic_loss'] = loss
    return loss, (values, omegas)
  return objective
