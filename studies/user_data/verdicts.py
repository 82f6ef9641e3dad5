"""The study's readings of its records, judged as its page fixes them (studies/user_data/
README.md, "The test"): each question's contrast per split, its exact signed-rank test over
the splits, Holm over the six questions in each direction at HOLM_LEVEL, the words, and the
Hodges-Lehmann estimate with its exact interval; and the page's results part.

A run's endpoints come from its record alone (metrics.json and its eval curves), as the
page's "Endpoints" defines them (`endpoint`).
"""
import dataclasses
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from studies.fashion_mnist_100 import paired_test
from studies.fashion_mnist_100 import split_test
from studies.user_data import plan as plan_lib
from tf_ipmssl.run_dir import event_files
from tf_ipmssl.run_dir import reporting
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import results as results_lib

HOLM_LEVEL = 0.025  # Per direction: supported and contradicted together at 0.05.
CONFIDENCE = 0.95
SUPPORTED, CONTRADICTED, NOT_SHOWN = paired_test.SUPPORTED, paired_test.CONTRADICTED, \
    paired_test.NOT_SHOWN
SUBSET_TAG, TEST_TAG = 'eval/validation_subset_error', 'eval/test_error'
# Each question's stated direction (d_s > 0) in README's words (the page's "Questions").
CLAIMS = {
    'imbalance': 'With imbalanced labels (ratio 10; unlabeled images cut to the same '
                 'profile, the step still chosen on 5,000 validation images), K+1 below the '
                 'supervised critic (class-averaged test error)',
    'mismatch': 'With every unlabeled image from the 4 classes nobody labeled, K+1 below the '
                'supervised critic (6 known classes)',
    'mismatch_cost': "Those foreign unlabeled images cost the K+1 critic test error "
                     "(100% − 0% foreign)",
    'selection': 'Choosing the step with 10 validation images per class costs test error '
                 'against choosing it with 5,000 (K+1, balanced labels)',
    'score_vs_chance': "The export's default score (the K+1 critic's −f, trained with no "
                       'foreign unlabeled image) ranks the test images of classes nobody '
                       'labeled above the known ones (AUROC above 0.5)',
    'score_vs_softmax': "That AUROC above the supervised critic's largest softmax "
                        'probability\'s',
}


def subset_step(curves: Dict[str, Dict[int, float]]) -> Optional[int]:
  """The earliest step with the lowest validation-subset error (the trainer's tie rule,
  results.earliest_tied_step); None without the curve."""
  return results_lib.earliest_tied_step(curves.get(SUBSET_TAG) or {})


def endpoint(model_dir: str, name: str) -> Optional[float]:
  """The run's endpoint `name` (plan.ENDPOINTS) from its record; None where it lacks it or
  holds no finite number."""
  value = _recorded_endpoint(model_dir, name)
  return None if value is None or not math.isfinite(value) else float(value)


def _recorded_endpoint(model_dir: str, name: str) -> Optional[float]:
  metrics = run_files.read_json(model_dir, run_files.METRICS_FILE, unreadable_ok=True) or {}
  best = metrics.get('best') or {}
  if name == 'test error':
    return best.get('test_error')
  if name == 'balanced test error':
    return best.get('test_balanced_error')
  if name == "test error at the subset's step":
    curves = event_files.read_eval_curves(model_dir)
    step = subset_step(curves)
    value = None if step is None else curves.get(TEST_TAG, {}).get(step)
    confusion = best.get('test_confusion')
    if value is None or not confusion:
      return None
    # The event file keeps float32: the rate of its count, as metrics.json's errors are, so
    # that both rules selecting one step give a contrast of exactly 0.
    return reporting.stored_percent(value, int(np.sum(confusion)))
  if name.startswith('auroc '):
    scores = (metrics.get('foreign_test') or {}).get('scores') or {}
    return (scores.get(name[len('auroc '):]) or {}).get('auroc')
  raise ValueError(f'unknown endpoint {name!r}')


@dataclasses.dataclass(frozen=True)
class QuestionResult:
  question: str
  contrasts: Dict[int, Optional[float]]  # Per split (seed): d_s, None while a run is missing.
  cpus: Dict[int, Tuple[str, ...]]  # Per split: the CPUs its runs trained on.
  planned: int
  test: Optional[split_test.SplitTestResult] = None
  interval: Optional[paired_test.Interval] = None
  adjusted: Optional[float] = None
  adjusted_other: Optional[float] = None

  @property
  def complete(self) -> bool:
    return sum(d is not None for d in self.contrasts.values()) == self.planned

  @property
  def word(self) -> Optional[str]:
    if self.adjusted is None:
      return None
    return paired_test.word(self.adjusted, self.adjusted_other, HOLM_LEVEL)

  @property
  def mixed_cpu_splits(self) -> Tuple[int, ...]:
    return tuple(s for s, cpus in self.cpus.items() if len(cpus) > 1)

  @property
  def zero_splits(self) -> Tuple[int, ...]:
    """The splits whose contrast is exactly 0: each halves the least p the test can give."""
    return tuple(s for s, d in self.contrasts.items() if d == 0)


def lacking(plan: plan_lib.Plan, records: str) -> List[str]:
  """'part cell seed s: endpoint' for each recorded run (its metrics.json exists) that
  lacks an endpoint a question reads: such a question can never be tested."""
  found = []
  for part, cell, seed in plan_lib.recorded(records, plan):
    for name in sorted({t.endpoint for terms in plan.questions.values() for t in terms
                        if (t.part, t.cell) == (part, cell)}):
      if endpoint(plan_lib.record_dir(records, part, cell, seed), name) is None:
        found.append(f'{part} {cell} seed {seed}: {name}')
  return found


def contrast(terms: Sequence[plan_lib.Term], records: str, seed: int
             ) -> Tuple[Optional[float], Tuple[str, ...]]:
  """d_s of a question's terms on split `seed`, and the CPUs of the runs it read."""
  total, cpus = 0.0, []
  for term in terms:
    if term.constant is not None:
      total += term.weight * term.constant
      continue
    model_dir = plan_lib.record_dir(records, term.part, term.cell, seed)
    value = endpoint(model_dir, term.endpoint)
    if value is None:
      return None, ()
    total += term.weight * value
    cpus.append(results_lib.cpu_of(model_dir) or 'unknown CPU')
  return total, tuple(sorted(set(cpus)))


def judge(plan: plan_lib.Plan, records: str) -> List[QuestionResult]:
  """Every question's contrasts, and once all are complete, the tests and words (Holm over
  the complete questions only once every question is complete, as the page fixes it)."""
  results = []
  for question, terms in plan.questions.items():
    found = {seed: contrast(terms, records, seed) for seed in plan.seeds}
    results.append(QuestionResult(question, {s: d for s, (d, _) in found.items()},
                                  {s: c for s, (d, c) in found.items() if d is not None},
                                  len(plan.seeds)))
  if not all(r.complete for r in results):
    return results
  tested = []
  for r in results:
    d = [r.contrasts[s] for s in plan.seeds]
    tested.append(dataclasses.replace(r, test=split_test.signed_rank_over_splits(d),
                                      interval=paired_test.hodges_lehmann(d, CONFIDENCE)))
  adjusted = paired_test.holm([r.test.p_value for r in tested])
  other = paired_test.holm([r.test.p_other for r in tested])
  return [dataclasses.replace(r, adjusted=a, adjusted_other=o)
          for r, a, o in zip(tested, adjusted, other)]


def readme_lines(plan: plan_lib.Plan, records: str) -> str:
  """README's lines on the study: one per question once every run is in, else how many
  are."""
  results = judge(plan, records)
  if not all(r.complete for r in results):
    missing = lacking(plan, records)
    return (f'- Under way: {len(plan_lib.recorded(records, plan))} of '
            f'{len(plan_lib.runs(plan))} runs recorded; no question is tested until every '
            'contrast is in' + (f' (recorded without an endpoint: {"; ".join(missing)})'
                                if missing else '') + '.')
  lines = []
  for r in results:
    unit = 'AUROC' if r.question.startswith('score') else 'points'
    # The p that decides the word (the page gives both, and the interval's coverage).
    p = (f'Holm-adjusted p the other way={r.adjusted_other:.4f}' if r.word == CONTRADICTED
         else f'Holm-adjusted p={r.adjusted:.4f}')
    estimate = r.interval.formatted(_places(r.question), coverage=False)
    lines.append(f'- {CLAIMS[r.question]}: **{r.word}** (n={len(r.contrasts)} splits, {p}; '
                 f'{estimate} {unit})')
  return '\n'.join(lines)


def _places(question: str) -> int:
  """AUROC questions in fractions (3 decimals), the others in points of error (1 decimal)."""
  return 3 if question.startswith('score') else 1


def _number(question: str, value: float) -> str:
  return f'{value:+.{_places(question)}f}'


def results_part(plan: plan_lib.Plan, records: str) -> str:
  """The page's results part: one row per question."""
  results = judge(plan, records)
  recorded = len(plan_lib.recorded(records, plan))
  if not recorded:
    return 'No record yet.'
  lines = [f'{recorded} of {len(plan_lib.runs(plan))} runs recorded.', '',
           '| question | n | verdict | p (Holm) | p other way (Holm) | estimate [interval] '
           '(coverage) | d per split |', '|---|---:|---|---|---|---|---|']
  for r in results:
    n = sum(d is not None for d in r.contrasts.values())
    per_split = ' / '.join('–' if d is None else _number(r.question, d)
                           for d in r.contrasts.values())
    if r.test is None:
      lines.append(f'| {r.question} | {n} of {r.planned} | not yet tested | | | | '
                   f'{per_split} |')
      continue
    lines.append(
        f'| {r.question} | {n} | **{r.word}** | {r.test.p_value:.4f} ({r.adjusted:.4f}) | '
        f'{r.test.p_other:.4f} ({r.adjusted_other:.4f}) | '
        f'{r.interval.formatted(_places(r.question))} | {per_split} |')
  zeros = [f'{r.question} on split(s) {", ".join(map(str, r.zero_splits))}' for r in results
           if r.zero_splits]
  if zeros:
    lines += ['', f'Contrasts of exactly 0 (each halves the least p the test can give): '
              f'{"; ".join(zeros)}.']
  missing = lacking(plan, records)
  if missing:
    lines += ['', 'Recorded without an endpoint a question reads (that question cannot be '
              f'tested until the run is retrained): {"; ".join(missing)}.']
  for r in results:
    if r.mixed_cpu_splits and r.test is not None:
      kept = [d for s, d in r.contrasts.items() if s not in r.mixed_cpu_splits]
      line = (f'- {r.question}: splits {", ".join(map(str, r.mixed_cpu_splits))} trained on '
              'more than one CPU')
      if kept:
        test = split_test.signed_rank_over_splits(kept)
        i = paired_test.hodges_lehmann(kept, CONFIDENCE)
        line += (f'; without them n = {len(kept)}, p = {test.p_value:.4f} (unadjusted), '
                 f'estimate {_number(r.question, i.estimate)} [{_number(r.question, i.low)}, '
                 f'{_number(r.question, i.high)}]')
      lines += ['', line + '.']
  return '\n'.join(lines)
