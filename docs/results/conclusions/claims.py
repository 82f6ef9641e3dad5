"""The paper's take-aways for its Tables 2 and 3, and its three conclusions, as claims on
cells, checked on the miniature tables' runs (tf_ipmssl.sweep.claims).

  python docs/results/conclusions/claims.py ROOT

ROOT is the sweep root (or --archive) of the Tables 2 and 3 miniature sweep; Table 1's
runs come from its committed runs.csv. Prints each claim's verdict and numbers. A claim is
a list of pairs (higher, lower): the paper says the first cell's error is above the
second's. Written before the sweep's results were seen; the thresholds below likewise.
"""
import itertools
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
from tf_ipmssl import cells as cells_lib  # pylint: disable=g-import-not-at-top
from tf_ipmssl.sweep import claims  # pylint: disable=g-import-not-at-top
from tf_ipmssl.sweep import tables  # pylint: disable=g-import-not-at-top

BASELINE = 'appendix_c/cifar10_none_4k'  # The supervised critic under the same preset.
TABLE1_RUNS = REPO / 'docs' / 'results' / 'table1_fashion_mnist_100' / 'runs.csv'
# "Fits its labels": a mean labeled-set error at the best validation step at most this (%).
FITS = 10.0


def _t1(name):
  return f'table1/cifar10_{name}'


def _t2(name):
  return f'table2/cifar10_{name}'


def _t3(name):
  return f'table3/cifar10_{name}'


# Table 2: where the constraints act.
F_NEG_ONLY = [_t2(n) for n in ('gp_fneg', 'sobolev_fneg', 'fisher_fneg',
                               'fisher_fneg_sobolev_fneg')]
ON_F_OR_F_POS = [_t2(n) for n in ('gp_f', 'sobolev_f', 'fisher_f', 'fisher_f_sobolev_f',
                                  'fisher_f_sobolev_fneg', 'fisher_fneg_sobolev_f',
                                  'fisher_fpos_sobolev_f', 'fisher_fpos_sobolev_fneg')]
GRADIENT_NORM_ON_F = [_t2(n) for n in ('gp_f', 'sobolev_f', 'fisher_f_sobolev_f',
                                       'fisher_fneg_sobolev_f', 'fisher_fpos_sobolev_f')]
CLASSIFIER_FREE = [_t2(n) for n in ('fisher_f', 'fisher_f_sobolev_fneg',
                                    'fisher_fpos_sobolev_fneg')]
# Table 3: how to normalize the critic. Layer norm: statistics (singleton | per channel),
# then parameters (per channel | per pixel).
LN_SHAPES = ('singleton_per_channel', 'singleton_per_pixel', 'per_channel_per_channel',
             'per_channel_per_pixel')


def _ln(shape, ipm):
  return _t3(f'layer_norm_{shape}_{ipm}')


TABLE2_CLAIMS = (
    ('Constraints acting only on f− fail: each far above every cell with a constraint on f '
     'or f+', list(itertools.product(F_NEG_ONLY, ON_F_OR_F_POS))),
    ('A gradient-norm constraint on the full f compromises the classifier: Ω_GP(f), Ω_S(f), '
     'Ω_F(f) + Ω_S(f), Ω_F(f−) + Ω_S(f), Ω_F(f+) + Ω_S(f) each above Ω_F(f), '
     'Ω_F(f) + Ω_S(f−) and Ω_F(f+) + Ω_S(f−)',
     list(itertools.product(GRADIENT_NORM_ON_F, CLASSIFIER_FREE))),
)
TABLE3_CLAIMS = (
    ('Batch norm worse than every layer norm and than none, for Fisher',
     [(_t3('batch_norm_fisher'), other)
      for other in [_ln(s, 'fisher') for s in LN_SHAPES] + [_t3('none_fisher')]]),
    ('Layer norm with singleton statistics better than with per-channel statistics (each '
     'parameter shape, each IPM)',
     [(_ln(f'per_channel_{params}', ipm), _ln(f'singleton_{params}', ipm))
      for ipm in ('fisher', 'fisher_sobolev') for params in ('per_channel', 'per_pixel')]),
    ('Fisher better with layer norm (singleton, per channel) than with none',
     [(_t3('none_fisher'), _ln('singleton_per_channel', 'fisher'))]),
    ('Fisher + Sobolev better with none than with any layer norm',
     [(_ln(s, 'fisher_sobolev'), _t3('none_fisher_sobolev')) for s in LN_SHAPES]),
)
# Conclusion (1), from Table 1: K+1 beats plain where the paper finds it (Fisher, Sobolev,
# Fisher + Sobolev), and the Fisher family's K+1 cells beat supervised training.
K_PLUS_1_CLAIMS = (
    ('K+1 below plain (Fisher, Sobolev, Fisher + Sobolev)',
     [(_t1(f'{ipm}_plain'), _t1(f'{ipm}_kplus1'))
      for ipm in ('fisher', 'sobolev', 'fisher_sobolev')]),
    ('The Fisher family\'s K+1 cells below the supervised critic on the same labels',
     [(BASELINE, _t1(f'{ipm}_{column}')) for ipm in ('fisher', 'fisher_sobolev')
      for column in ('kplus1', 'kplus1_entropy')]),
)


def table1_results():
  return tables.read_runs_csv(str(TABLE1_RUNS))


def sweep_results(root):
  """{cell id: CellResult} of Tables 2 and 3 (CIFAR-10 cells) and the baseline under root."""
  cells = (cells_lib.select_cells(tables=['table2', 'table3'], datasets=['cifar10'])
           + (cells_lib.get_cell(BASELINE),))
  return tables.collect(root, cells)


def overall(verdicts):
  """A conclusion's verdict from its claims': holds when every claim holds; partly when
  some hold or partly hold; undecided while any claim is; otherwise does not hold."""
  if verdicts and all(v == claims.HOLDS for v in verdicts):
    return claims.HOLDS
  if any(v.startswith(claims.UNDECIDED) for v in verdicts) or not verdicts:
    return claims.UNDECIDED
  if any(v in (claims.HOLDS, claims.PARTLY) for v in verdicts):
    return claims.PARTLY
  return claims.DOES_NOT_HOLD


def claim_verdicts(results, claim_list):
  return [claims.check_claim(results, pairs)[0] for _, pairs in claim_list]


def claim_lines(results, claim_list):
  """One markdown item per claim: its verdict, the pairs' counts, the decisive numbers."""
  lines = []
  for title, pairs in claim_list:
    verdict, checks = claims.check_claim(results, pairs)
    decided = [c for c in checks if c.difference is not None]
    detail = claims.counts(checks)
    if decided:
      smallest = min(decided, key=lambda c: c.difference)
      detail += (f'; smallest paired gap {smallest.higher.cell.id} − '
                 f'{smallest.lower.cell.id} = {smallest.difference:+.2f} points')
    failing = [c for c in checks if c.verdict == claims.DOES_NOT_HOLD]
    if failing:
      detail += '; reversed: ' + '; '.join(c.text for c in failing)
    lines.append(f'- **{title}**: {verdict} — {detail}.')
  return lines


def mechanism(results):
  """(verdict, markdown item): the paper's explanation of the gradient-norm-on-f cells, on
  the labeled-set error at the best validation step. Holds when the three classifier-free
  cells fit their labels (mean ≤ FITS) and each gradient-norm-on-f cell keeps a higher
  labeled error than each of them (the pairs' claim holds); does not hold when every cell
  fits its labels. Like every pair, the fit is judged on two seeds or more: while a pair is
  undecided, so is the mechanism."""
  title = '- **Mechanism (underfitting of the labeled set)**'
  labeled = {cell_id: claims.labeled_errors(results[cell_id])
             for cell_id in GRADIENT_NORM_ON_F + CLASSIFIER_FREE}
  missing = sorted(c for c, r in labeled.items() if not r.n)
  if missing:
    return claims.UNDECIDED, (f'{title}: undecided — no labeled-set error yet for '
                              f'{", ".join(missing)}.')
  fit = {c: labeled[c].mean for c in CLASSIFIER_FREE}
  fits = all(v <= FITS for v in fit.values())
  verdict, checks = claims.check_claim(
      labeled, list(itertools.product(GRADIENT_NORM_ON_F, CLASSIFIER_FREE)))
  if claims.UNDECIDED not in [c.verdict for c in checks]:
    if not fits:
      verdict = claims.PARTLY if verdict == claims.HOLDS else claims.DOES_NOT_HOLD
    if all(labeled[c].mean <= FITS for c in GRADIENT_NORM_ON_F):
      verdict = claims.DOES_NOT_HOLD  # Every cell fits its labels: no underfitting to explain.
  fit_text = ', '.join(f'{c.split("/")[1]} {v:.2f}%' for c, v in fit.items())
  high_text = ', '.join(f'{c.split("/")[1]} {labeled[c].mean:.2f}%' for c in GRADIENT_NORM_ON_F)
  return verdict, (f'{title}: {verdict} — labeled-set error at the best validation step, '
                   f'classifier-free cells (fit, ≤ {FITS:.0f}%: {"yes" if fits else "no"}): '
                   f'{fit_text}; gradient norm on f: {high_text}; {claims.counts(checks)}.')


def main(root):
  results = sweep_results(root)
  print('Table 2')
  print('\n'.join(claim_lines(results, TABLE2_CLAIMS) + [mechanism(results)[1]]))
  print('Table 3')
  print('\n'.join(claim_lines(results, TABLE3_CLAIMS)))
  print('Table 1 (conclusion 1)')
  print('\n'.join(claim_lines(table1_results(), K_PLUS_1_CLAIMS)))


if __name__ == '__main__':
  if len(sys.argv) != 2:
    sys.exit(__doc__)
  main(sys.argv[1])
