"""An independent float64 NumPy evaluation of the critic objective of algorithm.md#formulations, #critic-objective.

Input gradients are written in closed form for the tiny critics of `tiny_critics.py`, using
∂f+/∂s_y = p_y (1 + s_y − f+) for K+1 and ∂f+^H/∂s_y = p_y (log p_y − f+^H) for the entropy
variant; the tests check them against finite differences of the TensorFlow critics.
"""
import numpy as np


def logsumexp(s):
  top = s.max(axis=-1, keepdims=True)
  return (top + np.log(np.exp(s - top).sum(axis=-1, keepdims=True)))[..., 0]


def log_softmax(s):
  return s - logsumexp(s)[..., None]


def components(fake, logits, formulation):
  """{'f', 'f_pos', 'f_neg'} per example (algorithm.md#formulations); f_pos/f_neg None for 'plain'."""
  if formulation == 'plain':
    return {'f': fake, 'f_pos': None, 'f_neg': None}
  log_p = log_softmax(logits)
  p = np.exp(log_p)
  f_pos = (p * logits).sum(-1) if formulation == 'kplus1' else (p * log_p).sum(-1)
  return {'f': f_pos - fake, 'f_pos': f_pos, 'f_neg': fake}


def head_gradients(logits, component, formulation):
  """(∂h/∂fake_logit, a scalar; ∂h/∂class_logits [B, K]) for component h."""
  if component == 'f_neg' or formulation == 'plain':
    return 1.0, np.zeros_like(logits)
  log_p = log_softmax(logits)
  p = np.exp(log_p)
  if formulation == 'kplus1':
    d_pos = p * (1.0 + logits - (p * logits).sum(-1, keepdims=True))
  else:
    d_pos = p * (log_p - (p * log_p).sum(-1, keepdims=True))
  return (0.0, d_pos) if component == 'f_pos' else (-1.0, d_pos)


class NumpyLinear:
  """NumPy twin of tiny_critics.LinearCritic."""

  def __init__(self, params):
    self.w, self.a, self.c = params['w'], params['a'], params['c']

  def forward(self, x):
    flat = x.reshape(len(x), -1)
    return flat @ self.w, flat @ self.a + self.c

  def input_gradient(self, x, component, formulation):
    _, logits = self.forward(x)
    d_fake, d_logits = head_gradients(logits, component, formulation)
    return (d_fake * self.w[None, :] + d_logits @ self.a.T).reshape(x.shape)


class NumpyMlp:
  """NumPy twin of tiny_critics.MlpCritic (without batch norm layers)."""

  def __init__(self, params):
    self.p = params

  def _hidden(self, x):
    return np.tanh(x.reshape(len(x), -1) @ self.p['w1'] + self.p['b1'])

  def forward(self, x):
    h = self._hidden(x)
    return h @ self.p['v'], h @ self.p['s'] + self.p['c']

  def input_gradient(self, x, component, formulation):
    h = self._hidden(x)
    _, logits = self.forward(x)
    d_fake, d_logits = head_gradients(logits, component, formulation)
    d_h = d_fake * self.p['v'][None, :] + d_logits @ self.p['s'].T
    return (((1.0 - h**2) * d_h) @ self.p['w1'].T).reshape(x.shape)


def squared_norms(g):
  return (g.reshape(len(g), -1) ** 2).sum(-1)


def pairwise_mean_square(f_pos, f_neg):
  """Mean over the [B, B] matrix F[i, j] = f+(x_j) − f-(x_i) of F²."""
  return np.mean((f_pos[None, :] - f_neg[:, None]) ** 2)


def critic_loss(model, x_l, y_l, x_p, x_q, *, formulation, constraints, multipliers,
                lambda_ce, alpha=None, pairwise=False, ipm_weight=1.0):
  """−L_D of algorithm.md#critic-objective and the Ω of each constraint, all over one (global) batch.
  `ipm_weight`: w of the IPM ramp-up, the loss's −IPM becoming −w·IPM."""
  b = len(x_p)
  outs = {side: components(*model.forward(x), formulation)
          for side, x in (('p', x_p), ('q', x_q))}
  _, logits_l = model.forward(x_l)
  ce = np.mean(logsumexp(logits_l) - logits_l[np.arange(len(y_l)), y_l])
  loss = -ipm_weight * (outs['p']['f'].mean() - outs['q']['f'].mean()) + lambda_ce * ce
  pairwise_f = pairwise and formulation != 'plain'
  omegas = {}
  for c in constraints:
    scale = b if (pairwise_f and c.component == 'f') else 1.0
    if c.kind == 'fisher':
      if pairwise_f and c.component == 'f':
        sq = [pairwise_mean_square(outs[s]['f_pos'], outs[s]['f_neg']) for s in 'pq']
      else:
        sq = [np.mean(outs[s][c.component] ** 2) for s in 'pq']
      omega = 0.5 * sq[0] + 0.5 * sq[1] - 1.0
    elif c.kind == 'sobolev':
      sq = [np.mean(squared_norms(scale * model.input_gradient(x, c.component, formulation)))
            for x in (x_p, x_q)]
      omega = 0.5 * sq[0] + 0.5 * sq[1] - 1.0
    elif c.kind == 'gp':
      x_i = x_p + alpha * (x_q - x_p)
      norms = np.sqrt(squared_norms(scale * model.input_gradient(x_i, c.component, formulation)))
      omega = np.mean((norms - 1.0) ** 2)
      loss += c.weight * omega
    else:
      continue
    omegas[c.name] = omega
    if c.has_multiplier:
      loss += multipliers[c.name] * omega + 0.5 * c.penalty_weight * omega**2
  return loss, omegas
