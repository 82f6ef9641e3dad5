"""Draws docs/results/fashion_mnist_diagnosis.png from bin/diagnose's JSON files.

  .venv/bin/python studies/fashion_mnist_100/scripts/fashion_mnist_diagnosis.py OUT.png LABEL=RUN_DIR/diagnosis.json ...

One column per run (e.g. the quickstart at the paper's ρ_F, the released code's pairwise f,
the plain critic, the fix). Rows: labeled CE and validation error; Ω and λ of each
constraint; E_P f and E_Q f; the shares of the gradient on Φ from the IPM, CE and
constraint terms (and the cosine between the IPM and CE gradients).
"""
import json
import sys

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top


def _xy(points, scale=1.0):
  return [p[0] * scale for p in points], [p[1] for p in points]


def main(out, runs):
  figure, axes = plt.subplots(4, len(runs), figsize=(4.2 * len(runs), 12), squeeze=False)
  for column, (label, path) in enumerate(runs):
    with open(path) as f:
      data = json.load(f)
    train, evaluation, rows = data['curves']['train'], data['curves']['eval'], data['checkpoints']
    n_c = 2  # critic updates per step (the x axes count critic updates)
    ax = axes[0][column]
    ax.plot(*_xy(train.get('ce', []), n_c), label='labeled CE (train step)')
    ax.set_ylabel('CE')
    twin = ax.twinx()
    twin.plot(*_xy(evaluation.get('eval/validation_error', []), n_c), 'C3.-', label='val error %')
    twin.set_ylim(0, 100)
    ax.set_title(label, fontsize=10)
    ax.legend(loc='upper center', fontsize=7)
    twin.legend(loc='upper right', fontsize=7)
    ax = axes[1][column]
    for tag in sorted(t for t in train if t.startswith('omega/')):
      ax.plot(*_xy(train[tag], n_c), label=tag.replace('omega/', 'Ω '))
    ax.set_yscale('symlog')
    twin = ax.twinx()
    for tag in sorted(t for t in train if t.startswith('lambda/')):
      twin.plot(*_xy(train[tag], n_c), '--', label=tag.replace('lambda/', 'λ '))
    ax.legend(loc='upper left', fontsize=7)
    twin.legend(loc='upper right', fontsize=7)
    ax = axes[2][column]
    steps = [r['step'] * n_c for r in rows]
    ax.plot(steps, [r['mean_f_real'] for r in rows], 'o-', label='E_P f')
    ax.plot(steps, [r['mean_f_fake'] for r in rows], 'o-', label='E_Q f')
    ax.axhline(0, color='k', lw=0.5)
    ax.legend(fontsize=7)
    ax = axes[3][column]
    for term in ('ipm', 'ce', 'constraints'):
      ax.plot(steps, [r[f'share/{term}'] for r in rows], 'o-', label=f'share {term}')
    ax.plot(steps, [r['cos_ipm_ce'] for r in rows], 'k:', label='cos(IPM, CE)')
    ax.set_ylim(-1, 1)
    ax.axhline(0, color='k', lw=0.5)
    ax.set_xlabel('critic updates')
    ax.legend(fontsize=7)
  figure.tight_layout()
  figure.savefig(out, dpi=90)


if __name__ == '__main__':
  main(sys.argv[1], [a.split('=', 1) for a in sys.argv[2:]])
