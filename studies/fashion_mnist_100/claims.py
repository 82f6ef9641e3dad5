"""A paper's claim about its cells, checked on a sweep's runs pair by pair.

A claim is a list of ordered pairs (higher, lower): the paper says the first cell's error is
above the second's. A pair is judged on the per-seed differences d = higher − lower over the
seeds both cells have (a seed fixes the label split, so the paired difference is the fair
one), with a margin m (1 point unless said otherwise):

- holds: n ≥ 3 and every d > 0, mean ≥ m;
- reversed: n ≥ 3 and every d < 0, |mean| ≥ m;
- mixed: n ≥ 3 otherwise (a zero difference has neither sign);
- undecided: fewer than 3 shared seeds.

Where the paper finds no difference beyond its std (`NoDifference`), the pair holds when it
would be mixed and |mean| < 2 points; otherwise it says which way it leans ('leans: first
higher' / 'leans: first lower'). A pair 'not lower' (`NotLower`) holds unless reversed.

A claim holds when every pair holds, is reversed when every pair is reversed, and otherwise
reads 'partly: k of m hold, j reversed, the rest mixed'; while a pair is undecided, so is
the claim (cells still running never decide it). A one-pair claim has its pair's verdict.

What the rule can show: with no effect at all, each seed's sign is a coin flip, so the same
sign on every seed has probability 1/8 on 3 seeds (1/32 on 5) in the paper's direction.

The same check runs on any per-run number, e.g. the labeled-set error (`labeled_errors`), and
against a fixed level (`check_level`).
"""
import dataclasses
from typing import Optional, Sequence, Tuple

from tf_ipmssl.sweep import results as results_lib

HOLDS, REVERSED, MIXED, UNDECIDED, PARTLY = (
    'holds', 'reversed', 'mixed', 'undecided', 'partly')
LEANS_HIGHER, LEANS_LOWER = 'leans: first higher', 'leans: first lower'
MIN_SEEDS = 3
MARGIN = 1.0  # Points: the least mean difference that holds (or is reversed).
NO_DIFFERENCE_BAND = 2.0  # Points: a mixed pair within it shows "no difference".
# Kinds of pair.
HIGHER, NO_DIFFERENCE, NOT_LOWER = 'higher', 'no difference', 'not lower'
RULE = (
    'Each take-away is a set of pairs of cells (the paper finds the first cell\'s error the '
    'higher one), each pair judged on its per-seed differences on the seeds both cells have '
    '(a seed fixes the label split): it **holds** when there are at least 3 and every one '
    'has the paper\'s sign with a mean of at least 1 point, is **reversed** when every one '
    'has the other sign with |mean| ≥ 1 point, **mixed** otherwise, and **undecided** below 3 '
    'shared seeds. Where the paper finds no difference beyond its std, a pair holds when it '
    'is mixed with |mean| < 2 points, and otherwise says which way it leans. A take-away '
    'holds when every pair holds, is reversed when every pair is, reads "partly: k of m '
    'hold, j reversed, the rest mixed" otherwise, and stays undecided while any pair is. '
    '"Smallest gap" names the decided pair whose mean difference is least in the paper\'s '
    'direction, whatever its verdict (negative where that pair runs against the paper).')
WHAT_IT_CAN_SHOW = (
    'What the rule can show: with no effect at all each seed\'s sign is a coin flip, so the '
    'paper\'s sign on every one of 3 seeds has probability 1/8 (1/32 on 5); a pair that holds '
    'on 3 seeds is evidence at that level, not proof, and a mixed pair is no evidence either '
    'way.')

# After a per-seed difference whose two runs trained on different CPUs.
CPU_MARK = results_lib.CPU_MARK
CPU_NOTE = (
    f'A difference marked {CPU_MARK} compares two runs that trained on different CPUs, whose '
    'kernels round differently: one run moves by about a point between CPU families, so '
    'such a difference carries that much beside the cells\' own. The verdicts count it like '
    'any other.')


def short_name(cell_id: str) -> str:
  """'fisher_plain' for 'table1/cifar10_fisher_plain'; the supervised baseline of Appendix C
  ('appendix_c/cifar10_none_4k') is 'supervised'."""
  table, name = cell_id.split('/', 1)
  if table == 'appendix_c':
    return 'supervised'
  return name.split('_', 1)[1] if name.startswith(('cifar10_', 'svhn_')) else name


def ordered_verdict(diffs: Sequence[float], margin: float = MARGIN) -> str:
  """The verdict on differences the paper says are positive (see the module doc)."""
  if len(diffs) < MIN_SEEDS:
    return UNDECIDED
  mean = sum(diffs) / len(diffs)
  if all(d > 0 for d in diffs) and mean >= margin:
    return HOLDS
  if all(d < 0 for d in diffs) and -mean >= margin:
    return REVERSED
  return MIXED


def no_difference_verdict(diffs: Sequence[float], margin: float = MARGIN,
                          band: float = NO_DIFFERENCE_BAND) -> str:
  """The verdict where the paper finds no difference: holds when mixed within `band`."""
  if len(diffs) < MIN_SEEDS:
    return UNDECIDED
  mean = sum(diffs) / len(diffs)
  if ordered_verdict(diffs, margin) == MIXED and abs(mean) < band:
    return HOLDS
  return LEANS_HIGHER if mean > 0 else LEANS_LOWER


def not_lower_verdict(diffs: Sequence[float], margin: float = MARGIN) -> str:
  """The verdict where the paper says the first is not lower: holds unless reversed."""
  verdict = ordered_verdict(diffs, margin)
  return HOLDS if verdict == MIXED else verdict


_VERDICTS = {HIGHER: ordered_verdict, NO_DIFFERENCE: no_difference_verdict,
             NOT_LOWER: not_lower_verdict}


@dataclasses.dataclass(frozen=True)
class PairCheck:
  """One pair's check: `first` − `second` per shared seed, judged as `kind` says."""
  first: str  # Names as shown, e.g. 'fisher_plain', or a level such as '70%'.
  second: str
  seeds: Tuple[int, ...]
  diffs: Tuple[float, ...]
  verdict: str
  kind: str = HIGHER
  # Per shared seed: whether its two runs trained on different CPUs (marked CPU_MARK).
  across_cpus: Tuple[bool, ...] = ()

  @property
  def n(self) -> int:
    return len(self.diffs)

  @property
  def difference(self) -> Optional[float]:
    """Mean paired difference first − second (None without shared seeds)."""
    return results_lib.mean_std(self.diffs)[0]

  @property
  def decided(self) -> bool:
    return self.n >= MIN_SEEDS

  @property
  def per_seed(self) -> str:
    """'+66.1 / +7.0 / +5.3' (one decimal, seed order; CPU_MARK after a difference between
    runs on different CPUs) or '–'."""
    marks = self.across_cpus or (False,) * self.n
    return ' / '.join(f'{d:+.1f}' + (CPU_MARK if m else '')
                      for d, m in zip(self.diffs, marks)) or '–'

  @property
  def numbers(self) -> str:
    """'fisher_plain − fisher_kplus1: +66.1 / +7.0 / +5.3 (n=3, mean +26.1)'."""
    relation = {HIGHER: '', NO_DIFFERENCE: ' (no difference)',
                NOT_LOWER: ' (not lower)'}[self.kind]
    mean = '' if self.difference is None else f', mean {self.difference:+.1f}'
    return f'{self.first} − {self.second}{relation}: {self.per_seed} (n={self.n}{mean})'

  @property
  def text(self) -> str:
    """The numbers and the verdict: '...: +66.1 / +7.0 / +5.3 (n=3, mean +26.1): holds'."""
    return f'{self.numbers}: {self.verdict}'


def check_pair(first: results_lib.CellResult, second: results_lib.CellResult,
               kind: str = HIGHER, margin: float = MARGIN) -> PairCheck:
  """Whether `first` has the higher error (kind HIGHER), the same (NO_DIFFERENCE) or not a
  lower one (NOT_LOWER), paired over the shared seeds."""
  seeds, diffs, across_cpus = results_lib.paired_differences(first, second)
  return PairCheck(short_name(first.cell.id), short_name(second.cell.id), seeds, diffs,
                   _VERDICTS[kind](diffs, margin), kind, across_cpus)


def check_level(result: results_lib.CellResult, level: float, above: bool = True,
                margin: float = MARGIN) -> PairCheck:
  """Whether every run of `result` is above (or below) a fixed `level` (%)."""
  diffs = tuple((e - level) if above else (level - e) for e in result.errors)
  name, level_text = short_name(result.cell.id), f'{level:g}%'
  first, second = (name, level_text) if above else (level_text, name)
  return PairCheck(first, second, result.seeds, diffs, ordered_verdict(diffs, margin))


def claim_verdict(checks: Sequence[PairCheck]) -> str:
  """The claim's verdict from its pairs' (see the module doc)."""
  verdicts = [c.verdict for c in checks]
  if len(verdicts) == 1:
    return verdicts[0]
  if not verdicts or UNDECIDED in verdicts:
    return UNDECIDED
  holds, reversed_ = verdicts.count(HOLDS), verdicts.count(REVERSED)
  if holds == len(verdicts):
    return HOLDS
  if reversed_ == len(verdicts):
    return REVERSED
  leaning = sum(v in (LEANS_HIGHER, LEANS_LOWER) for v in verdicts)
  rest = 'the rest mixed' if not leaning else (
      f'{len(verdicts) - holds - reversed_ - leaning} mixed, {leaning} leaning')
  return f'{PARTLY}: {holds} of {len(verdicts)} hold, {reversed_} reversed, {rest}'


def summary(checks: Sequence[PairCheck]) -> str:
  """The decided pairs' count and the smallest gap among them: '3 of 4 pairs at n ≥ 3;
  smallest gap a − b +2.5 (n=3)', the decided pair (of any verdict: the weakest one for the
  claim) with the least mean difference in the paper's direction. Undecided pairs never
  give the smallest gap."""
  decided = [c for c in checks if c.decided]
  text = f'{len(decided)} of {len(checks)} pairs at n ≥ {MIN_SEEDS}'
  ordered = [c for c in decided if c.kind != NO_DIFFERENCE]
  if ordered:
    smallest = min(ordered, key=lambda c: c.difference)
    text += (f'; smallest gap {smallest.first} − {smallest.second} '
             f'{smallest.difference:+.1f} (n={smallest.n})')
  return text


def overall(verdicts: Sequence[str]) -> str:
  """A conclusion's verdict from its claims': holds when every claim holds, reversed when
  every claim is, undecided while any claim is, partly otherwise."""
  if not verdicts or UNDECIDED in verdicts:
    return UNDECIDED
  if all(v == HOLDS for v in verdicts):
    return HOLDS
  if all(v == REVERSED for v in verdicts):
    return REVERSED
  return PARTLY


def labeled_errors(result: results_lib.CellResult, which: str = 'last'
                   ) -> results_lib.CellResult:
  """`result` with each run's labeled-set error in place of its test error ('last': at its
  last evaluation, the end of training; 'best': at the best validation step); runs without
  it are left out."""
  field = {'best': 'labeled_error', 'last': 'last_labeled_error'}[which]
  runs = tuple(dataclasses.replace(run, test_error=getattr(run, field))
               for run in result.runs if getattr(run, field) is not None)
  return dataclasses.replace(result, runs=runs)
