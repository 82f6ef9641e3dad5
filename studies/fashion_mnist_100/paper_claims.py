"""The paper's take-aways of its Tables 1-3 and its three conclusions, as claims on its
CIFAR-10 cells, checked with the pair rule of studies.fashion_mnist_100.claims.

A claim is a list of pairs (first, second, kind): kind 'higher' says the paper finds the
first cell's error above the second's, 'no difference' that it finds none beyond its std,
'not lower' that the first is not below the second. A pair's second may be a fixed level (%)
instead of a cell. Where a pair's gap in the paper's own table is under the rule's margin,
the paper's numbers themselves would not make it hold; `Claim.small_paper_gaps` names them.

The mechanism the paper gives for its Table 2 (a gradient norm on the full critic f makes
"it impossible for the network to fit even the small labeled training set") is checked on
the labeled-set error at the end of training (`mechanism`).
"""
import dataclasses
import itertools
from typing import Dict, List, Optional, Sequence, Tuple, Union

from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import claims
from tf_ipmssl.sweep import results as results_lib

BASELINE = 'appendix_c/cifar10_none_4k'  # The supervised critic under the same preset.
# The mechanism: labeled-set error in % of 100 labeled images, so 3 points are 3 images.
MECHANISM_MARGIN = 3.0
CHANCE_LIKE = 70.0  # "Near chance" (90% for 10 classes): the paper's Sobolev plain is 80.45%.
BEST_MARGIN = 5.0  # Points the best SSL cell must gain over the supervised critic.

Results = Dict[str, results_lib.CellResult]


@dataclasses.dataclass(frozen=True)
class Pair:
  first: str  # A cell id.
  second: Union[str, float]  # A cell id or a level (%).
  kind: str = claims.HIGHER


@dataclasses.dataclass(frozen=True)
class Claim:
  title: str
  pairs: Tuple[Pair, ...]
  margin: float = claims.MARGIN
  note: str = ''  # How the claim was read from the paper, where that needs saying.

  def check(self, results: Results) -> Tuple[str, List[claims.PairCheck]]:
    """(the claim's verdict, each pair's check) on `results` (cell id: CellResult)."""
    checks = []
    for pair in self.pairs:
      if isinstance(pair.second, str):
        checks.append(claims.check_pair(results[pair.first], results[pair.second], pair.kind,
                                        self.margin))
      else:
        checks.append(claims.check_level(results[pair.first], pair.second,
                                         margin=self.margin))
    return claims.claim_verdict(checks), checks

  @property
  def small_paper_gaps(self) -> List[Tuple[str, str, float]]:
    """(first, second, the paper's gap) for each 'higher' pair of two cells whose gap in the
    paper's own table is under the margin."""
    small = []
    for pair in self.pairs:
      if pair.kind == claims.HIGHER and isinstance(pair.second, str):
        gap = (cells_lib.get_cell(pair.first).paper_error
               - cells_lib.get_cell(pair.second).paper_error)
        if gap < self.margin:
          small.append((claims.short_name(pair.first), claims.short_name(pair.second), gap))
    return small


def paper_pair(a: str, b: str) -> Pair:
  """The pair as the paper's own numbers order it: the higher error first, or a 'no
  difference' pair (a, b) where the gap is within the larger of the two cells' stds."""
  cell_a, cell_b = cells_lib.get_cell(a), cells_lib.get_cell(b)
  noise = max(cell_a.paper_std or 0.0, cell_b.paper_std or 0.0)
  if abs(cell_a.paper_error - cell_b.paper_error) <= noise:
    return Pair(a, b, claims.NO_DIFFERENCE)
  return Pair(a, b) if cell_a.paper_error > cell_b.paper_error else Pair(b, a)


def _pairs(firsts: Sequence[str], seconds: Sequence[str], kind: str = claims.HIGHER):
  return tuple(Pair(a, b, kind) for a, b in itertools.product(firsts, seconds))


def _t1(name):
  return f'table1/cifar10_{name}'


def _t2(name):
  return f'table2/cifar10_{name}'


def _t3(name):
  return f'table3/cifar10_{name}'


# Table 1: critic formulations.
IPMS = ('wgan_gp', 'fisher', 'sobolev', 'fisher_sobolev')
FISHER_FAMILY = tuple(_t1(f'{ipm}_{column}') for ipm in ('fisher', 'fisher_sobolev')
                      for column in ('plain', 'kplus1', 'kplus1_entropy'))
TABLE1_OTHERS = tuple(cell.id for cell in cells_lib.select_cells(tables=['table1'],
                                                                 datasets=['cifar10'])
                      if cell.id not in FISHER_FAMILY)
BEST_CELL = _t1('fisher_sobolev_kplus1')


def _table1_claims():
  found = [Claim('Fisher family below WGAN-GP, Sobolev and clipping',
                 _pairs(TABLE1_OTHERS, FISHER_FAMILY))]
  for ipm in IPMS:
    for better, worse, what in (('kplus1', 'plain', 'K+1 vs plain'),
                                ('kplus1_entropy', 'kplus1', 'f+^H vs K+1')):
      a, b = cells_lib.get_cell(_t1(f'{ipm}_{better}')), cells_lib.get_cell(_t1(f'{ipm}_{worse}'))
      pair = paper_pair(a.id, b.id)
      said = ('no difference beyond its std' if pair.kind == claims.NO_DIFFERENCE else
              f'{claims.short_name(pair.first)} higher')
      found.append(Claim(f'{what}, {ipm} (paper {a.paper_error:.2f} vs {b.paper_error:.2f}: '
                         f'{said})', (pair,)))
  found.append(Claim(f'Sobolev plain near chance (paper 80.45%; chance 90%; here: above '
                     f'{CHANCE_LIKE:.0f}%)', (Pair(_t1('sobolev_plain'), CHANCE_LIKE),)))
  found.append(Claim('K+1 Fisher + Sobolev the best cell (paper 16.29%): below each other cell',
                     _pairs([c for c in TABLE1_OTHERS + FISHER_FAMILY if c != BEST_CELL],
                            [BEST_CELL])))
  found.append(Claim('The Fisher family (the paper\'s cells not in gray) below the supervised '
                     'critic on the same labels; the gray cells not below it',
                     _pairs([BASELINE], FISHER_FAMILY)
                     + _pairs(TABLE1_OTHERS, [BASELINE], claims.NOT_LOWER)))
  return tuple(found)


TABLE1_CLAIMS = _table1_claims()


def best_ssl_claim(results: Results) -> Optional[Claim]:
  """The best SSL cell of Table 1 (lowest mean) at least BEST_MARGIN points below the
  supervised critic on every seed's labels; None before any Table 1 cell has a run."""
  finished = [r for cell_id, r in results.items() if cell_id.startswith('table1/') and r.n]
  if not finished:
    return None
  best = min(finished, key=lambda r: r.mean).cell.id
  return Claim(f'The best SSL cell ({claims.short_name(best)}) ≥ {BEST_MARGIN:.0f} points '
               f'below supervised', (Pair(BASELINE, best),), margin=BEST_MARGIN)


# Conclusion (1), from Table 1: K+1 beats plain where the paper finds it (Fisher, Sobolev,
# Fisher + Sobolev), and the Fisher family's K+1 cells beat supervised training.
K_PLUS_1_CLAIMS = (
    Claim('K+1 below plain (Fisher, Sobolev, Fisher + Sobolev)',
          tuple(Pair(_t1(f'{ipm}_plain'), _t1(f'{ipm}_kplus1'))
                for ipm in ('fisher', 'sobolev', 'fisher_sobolev'))),
    Claim('The Fisher family\'s K+1 cells below the supervised critic on the same labels',
          _pairs([BASELINE], [_t1(f'{ipm}_{column}') for ipm in ('fisher', 'fisher_sobolev')
                              for column in ('kplus1', 'kplus1_entropy')])),
)

# Table 2: where the constraints act.
F_NEG_ONLY = tuple(_t2(n) for n in ('gp_fneg', 'sobolev_fneg', 'fisher_fneg',
                                    'fisher_fneg_sobolev_fneg'))
GRADIENT_NORM_ON_F = tuple(_t2(n) for n in ('gp_f', 'sobolev_f', 'fisher_f_sobolev_f',
                                            'fisher_fneg_sobolev_f', 'fisher_fpos_sobolev_f'))
NO_GRADIENT_NORM_ON_F = tuple(_t2(n) for n in ('fisher_f', 'fisher_f_sobolev_fneg',
                                               'fisher_fpos_sobolev_fneg'))
GROUPS = {**{c: 'f− only' for c in F_NEG_ONLY},
          **{c: 'gradient norm on f' for c in GRADIENT_NORM_ON_F},
          **{c: 'no gradient norm on f' for c in NO_GRADIENT_NORM_ON_F}}

TABLE2_CLAIMS = (
    Claim('Constraints acting only on f− fail: each f−-only cell above each cell without a '
          'gradient norm on f (Ω_F(f), Ω_F(f) + Ω_S(f−), Ω_F(f+) + Ω_S(f−)), and not below '
          'the supervised critic on the same labels',
          _pairs(F_NEG_ONLY, NO_GRADIENT_NORM_ON_F)
          + _pairs(F_NEG_ONLY, [BASELINE], claims.NOT_LOWER),
          note='the paper compares the f−-only cells with the cells it does not mark as '
               'failed; the gradient-norm-on-f cells failed too and are not ranked against '
               'them'),
    Claim('A gradient-norm constraint on the full f compromises the classifier: Ω_GP(f), '
          'Ω_S(f), Ω_F(f) + Ω_S(f), Ω_F(f−) + Ω_S(f), Ω_F(f+) + Ω_S(f) each above each cell '
          'without a gradient norm on f',
          _pairs(GRADIENT_NORM_ON_F, NO_GRADIENT_NORM_ON_F)),
)


# Table 3: how to normalize the critic. Layer norm: statistics (singleton | per channel),
# then parameters (per channel | per pixel).
LN_SHAPES = ('singleton_per_channel', 'singleton_per_pixel', 'per_channel_per_channel',
             'per_channel_per_pixel')


def _ln(shape, ipm):
  return _t3(f'layer_norm_{shape}_{ipm}')


TABLE3_CLAIMS = (
    Claim('Batch norm worse than every layer norm and than none, for Fisher',
          _pairs([_t3('batch_norm_fisher')],
                 [_ln(s, 'fisher') for s in LN_SHAPES] + [_t3('none_fisher')])),
    Claim('Layer norm with singleton statistics better than with per-channel statistics (each '
          'parameter shape, each IPM)',
          tuple(Pair(_ln(f'per_channel_{params}', ipm), _ln(f'singleton_{params}', ipm))
                for ipm in ('fisher', 'fisher_sobolev')
                for params in ('per_channel', 'per_pixel'))),
    Claim('With singleton statistics, parameters per feature map better than per pixel',
          tuple(paper_pair(_ln('singleton_per_pixel', ipm), _ln('singleton_per_channel', ipm))
                for ipm in ('fisher', 'fisher_sobolev')),
          note='for Fisher the paper\'s own gap (16.81 vs 16.45) is within its std (0.42), so '
               'that pair reads "no difference"'),
    Claim('Fisher better with layer norm (singleton, per channel) than with none',
          (Pair(_t3('none_fisher'), _ln('singleton_per_channel', 'fisher')),)),
    Claim('Fisher + Sobolev better with none than with any layer norm',
          tuple(Pair(_ln(s, 'fisher_sobolev'), _t3('none_fisher_sobolev')) for s in LN_SHAPES)),
)

CONCLUSION2_CLAIMS = TABLE3_CLAIMS[:1]
CONCLUSION3_CLAIMS = TABLE2_CLAIMS[1:]


@dataclasses.dataclass(frozen=True)
class Mechanism:
  verdict: str
  checks: Tuple[claims.PairCheck, ...]
  counterexamples: Tuple[str, ...]  # Gradient-norm-on-f cells that fit their labels.
  text: str  # A markdown item.


def _labeled_text(result: results_lib.CellResult) -> str:
  """'42 / 29 / 33 (lowest over the run – / 8 / 15)': the labeled-set error per seed at the
  end of training and, where it differs, the lowest over the run ('–' where the run's eval
  curve is not kept)."""
  runs = [run for run in result.runs if run.last_labeled_error is not None]
  text = ' / '.join(f'{run.last_labeled_error:g}' for run in runs) or '–'
  if any(run.lowest_labeled_error not in (None, run.last_labeled_error) for run in runs):
    text += ' (lowest over the run ' + ' / '.join(
        '–' if run.lowest_labeled_error is None else f'{run.lowest_labeled_error:g}'
        for run in runs) + ')'
  return text


def mechanism(results: Results) -> Mechanism:
  """The paper's mechanism for Table 2 on the labeled-set error at the end of training
  (% of 100 labeled images): each gradient-norm-on-f cell above each cell without one on
  every shared seed (the pair rule, margin MECHANISM_MARGIN). A gradient-norm-on-f cell whose
  every run ends below the margin (fewer than 3 of its 100 labels wrong) fits its labels:
  a counterexample, named whatever its n."""
  labeled = {c: claims.labeled_errors(results[c])
             for c in GRADIENT_NORM_ON_F + NO_GRADIENT_NORM_ON_F}
  checks = [claims.check_pair(labeled[a], labeled[b], margin=MECHANISM_MARGIN)
            for a, b in itertools.product(GRADIENT_NORM_ON_F, NO_GRADIENT_NORM_ON_F)]
  verdict = claims.claim_verdict(checks)
  counterexamples = tuple(c for c in GRADIENT_NORM_ON_F if labeled[c].n
                          and all(e < MECHANISM_MARGIN for e in labeled[c].errors))
  per_cell = '; '.join(f'{claims.short_name(c)} {_labeled_text(results[c])}'
                       for c in GRADIENT_NORM_ON_F + NO_GRADIENT_NORM_ON_F)
  text = (f'- **Mechanism: a gradient norm on f leaves the labeled set unfitted** (each '
          f'gradient-norm-on-f cell\'s labeled-set error at the end of training above each '
          f'cell\'s without one, margin {MECHANISM_MARGIN:g} images): {verdict} — '
          f'{claims.summary(checks)}. Final labeled-set error % per seed (the lowest over the '
          f'run beside it where it differs, – where the run\'s eval curve is not kept): '
          f'{per_cell}.')
  if counterexamples:
    text += (' Counterexample' + ('s' if len(counterexamples) > 1 else '') + ' (a gradient '
             'norm on f, yet its labels fitted): ' + ', '.join(
                 f'{claims.short_name(c)} (n={labeled[c].n})' for c in counterexamples) + '.')
  return Mechanism(verdict, tuple(checks), counterexamples, text)


def claim_items(results: Results, claim_list: Sequence[Claim]) -> List[str]:
  """Per claim a markdown item (its verdict, the decided pairs, the smallest gap) followed by
  one indented line per pair with its per-seed differences."""
  lines = []
  for claim in claim_list:
    verdict, checks = claim.check(results)
    if len(checks) == 1:
      item = f'- **{claim.title}**: {verdict} — {checks[0].numbers}'
    else:
      item = f'- **{claim.title}**: {verdict} — {claims.summary(checks)}'
    notes = [claim.note] if claim.note else []
    notes += [f'the paper\'s own gap {a} − {b} is {gap:+.2f}, under the {claim.margin:g}-point '
              'margin' for a, b, gap in claim.small_paper_gaps]
    lines.append(item + ''.join(f'; {n}' for n in notes) + '.')
    if len(checks) > 1:
      lines += [f'  - {check.text}' for check in checks]
  return lines


def verdicts(results: Results, claim_list: Sequence[Claim]) -> List[str]:
  return [claim.check(results)[0] for claim in claim_list]


def conclusion_verdicts(table1: Results, table23: Results) -> Tuple[str, str, str]:
  """The three conclusions' verdicts: (1) from K_PLUS_1_CLAIMS on Table 1, (2) from Table 3's
  batch-norm claim, (3) from Table 2's gradient-norm claim and the mechanism."""
  return (claims.overall(verdicts(table1, K_PLUS_1_CLAIMS)),
          claims.overall(verdicts(table23, CONCLUSION2_CLAIMS)),
          claims.overall(verdicts(table23, CONCLUSION3_CLAIMS) + [mechanism(table23).verdict]))


CONCLUSIONS = ('The K+1 formulation works (Table 1)',
               'Avoid batch normalization, also for Fisher (Table 3)',
               'Gradient-norm constraints on f− only, not on the full critic (Table 2)')


def conclusion_lines(table1: Results, table23: Results) -> List[str]:
  """One line per conclusion: its verdict and how many of its pairs hold (for README)."""
  pair_checks = (
      [c for claim in K_PLUS_1_CLAIMS for c in claim.check(table1)[1]],
      [c for claim in CONCLUSION2_CLAIMS for c in claim.check(table23)[1]],
      [c for claim in CONCLUSION3_CLAIMS for c in claim.check(table23)[1]]
      + list(mechanism(table23).checks))
  lines = []
  for title, verdict, checks in zip(CONCLUSIONS, conclusion_verdicts(table1, table23),
                                    pair_checks):
    decided = [c for c in checks if c.decided]
    held = sum(c.verdict == claims.HOLDS for c in decided)
    if len(decided) < len(checks):
      counts = f'{len(decided)} of {len(checks)} pairs decided so far'
    else:
      counts = f'{held} of {len(checks)} pairs hold on every seed'
    lines.append(f'{title}: **{verdict}** ({counts})')
  return lines
