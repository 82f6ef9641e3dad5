"""A paper's claim about its cells, checked on a sweep's runs pair by pair.

A claim is a list of ordered pairs (higher, lower): the paper says the first cell's error is
above the second's. Each pair gets paper_comparison.paired_verdict on the seeds both cells
have (a seed fixes the label split, so the paired difference is the fair one): 'holds',
'does not hold' (the other sign, beyond one std), 'within noise' or 'undecided' (fewer than
two shared seeds). The claim's verdict:

- holds: every pair holds;
- partly: some pairs hold and some do not (reversed or within noise);
- within noise: no pair holds and none is reversed;
- does not hold: no pair holds and at least one is reversed;
- undecided: a pair is undecided (cells still running), unless the decided pairs already
  show a reversal (then: does not hold so far).

The same check runs on any per-run number, e.g. the labeled-set error (`labeled_errors`).
"""
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl.sweep import paper_comparison
from tf_ipmssl.sweep import tables as tables_lib

HOLDS, DOES_NOT_HOLD, WITHIN_NOISE, UNDECIDED = (
    paper_comparison.HOLDS, paper_comparison.DOES_NOT_HOLD, paper_comparison.WITHIN_NOISE,
    paper_comparison.UNDECIDED)
PARTLY = 'partly'


@dataclasses.dataclass(frozen=True)
class PairCheck:
  higher: tables_lib.CellResult
  lower: tables_lib.CellResult
  verdict: str
  text: str  # 'a − b = +x ± s points (n=k paired)'.

  @property
  def difference(self) -> Optional[float]:
    """Mean paired difference higher − lower (None without shared seeds)."""
    other = dict(zip(self.lower.seeds, self.lower.errors))
    diffs = [e - other[s] for s, e in zip(self.higher.seeds, self.higher.errors)
             if s in other]
    return tables_lib.mean_std(diffs)[0]


def check_pair(higher: tables_lib.CellResult, lower: tables_lib.CellResult) -> PairCheck:
  """Whether `higher` has the higher error (paired over shared seeds)."""
  verdict, text = paper_comparison.paired_verdict(higher, lower, paper_says_first_lower=False)
  return PairCheck(higher, lower, verdict, text)


def claim_verdict(checks: Sequence[PairCheck]) -> str:
  """The claim's verdict from its pairs' (see the module doc)."""
  verdicts = [c.verdict for c in checks]
  if not verdicts:
    return UNDECIDED
  holds, reversed_ = verdicts.count(HOLDS), verdicts.count(DOES_NOT_HOLD)
  if UNDECIDED in verdicts:
    return f'{DOES_NOT_HOLD} so far' if reversed_ else UNDECIDED
  if holds == len(verdicts):
    return HOLDS
  if holds:
    return PARTLY
  return DOES_NOT_HOLD if reversed_ else WITHIN_NOISE


def check_claim(results: Dict[str, tables_lib.CellResult],
                pairs: Sequence[Tuple[str, str]]) -> Tuple[str, List[PairCheck]]:
  """(the claim's verdict, each pair's check) for pairs of cell ids (higher, lower)."""
  checks = [check_pair(results[a], results[b]) for a, b in pairs]
  return claim_verdict(checks), checks


def counts(checks: Sequence[PairCheck]) -> str:
  """'3 of 4 pairs hold, 1 within noise' (the verdicts' counts, in a fixed order)."""
  order = (HOLDS, WITHIN_NOISE, DOES_NOT_HOLD, UNDECIDED)
  tally = {v: sum(c.verdict == v for c in checks) for v in order}
  parts = [f'{tally[HOLDS]} of {len(checks)} pairs hold']
  parts += [f'{tally[v]} {v}' for v in order[1:] if tally[v]]
  return ', '.join(parts)


def labeled_errors(result: tables_lib.CellResult, which: str = 'best') -> tables_lib.CellResult:
  """`result` with each run's labeled-set error in place of its test error ('best': at the
  best validation step, 'final': at the end); runs that did not record it are left out."""
  field = {'best': 'labeled_error', 'final': 'final_labeled_error'}[which]
  runs = tuple(dataclasses.replace(run, test_error=getattr(run, field))
               for run in result.runs if getattr(run, field) is not None)
  return dataclasses.replace(result, runs=runs)
