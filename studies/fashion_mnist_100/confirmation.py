"""The confirmation of docs/results/confirmation.md: the paper's three conclusions on new
label splits, one contrast per family and split, decided by a fixed sequence of split-level
tests (split_test.py).

The page holds three tables the code reads (`read_plan`), so the pages judge exactly the
splits, cells, weights and endpoints it fixed: `confirmation splits` (the seeds),
`confirmation families` (order, primary and secondary endpoint, question) and
`confirmation cells` (each family's cells, their critic f and their weights). The runs' records
lie in confirmation_records/per_example and confirmation_records/broadcast beside the page.
"""
import dataclasses
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from studies.fashion_mnist_100 import paired_test
from studies.fashion_mnist_100 import protocol
from studies.fashion_mnist_100 import record_readings
from studies.fashion_mnist_100 import results_page
from studies.fashion_mnist_100 import split_test
from tf_ipmssl.sweep import results as results_lib

PAGE = 'confirmation.md'
RECORDS = 'confirmation_records'  # Beside the pages, under docs/results.
F_FOLDERS = {protocol.PER_EXAMPLE: 'per_example', protocol.BROADCAST: 'broadcast'}
SPLITS_PART, FAMILIES_PART, CELLS_PART = (
    'confirmation splits', 'confirmation families', 'confirmation cells')
TITLES = {'1': 'K+1 below plain (Fisher and Sobolev)',
          '2': 'Batch norm above no normalization (Fisher)',
          '3': 'Sobolev on f rather than f− costs more under the broadcast f'}

Key = Tuple[str, str]  # (cell id, critic f).


@dataclasses.dataclass(frozen=True)
class FamilyPlan:
  family: str
  order: int
  primary: str  # protocol.BEST or protocol.LATE.
  secondary: str
  question: str
  weights: Tuple[Tuple[Key, float], ...]

  @property
  def title(self) -> str:
    return TITLES.get(self.family, self.question)


@dataclasses.dataclass(frozen=True)
class Plan:
  seeds: Tuple[int, ...]
  families: Tuple[FamilyPlan, ...]  # In the order of the sequence.

  @property
  def keys(self) -> Tuple[Key, ...]:
    return tuple(dict.fromkeys(key for f in self.families for key, _ in f.weights))


def read_plan(page_path: str) -> Plan:
  """The confirmation's splits, families and cells, from its page."""
  with open(page_path) as f:
    text = f.read()
  splits = results_page.part(text, SPLITS_PART, page_path).strip()
  if not splits.startswith('seeds:'):
    raise errors.ConfigError(f'{page_path}: its splits part must read "seeds: FIRST-LAST"')
  seeds = protocol.seed_list(splits.split(':', 1)[1].strip())
  weights: Dict[str, List[Tuple[Key, float]]] = {}
  for family, cell, f, weight in results_page.table_rows(
      results_page.part(text, CELLS_PART, page_path), 4, page_path, 'family'):
    if f not in F_FOLDERS:
      raise errors.ConfigError(f'{page_path}: unknown critic f {f!r} (per-example, broadcast)')
    cells_lib.get_cell(cell)  # An unknown cell id is the page's mistake: say so.
    weights.setdefault(family, []).append(((cell, f), float(weight)))
  families = []
  for family, order, primary, secondary, question in results_page.table_rows(
      results_page.part(text, FAMILIES_PART, page_path), 5, page_path, 'family'):
    if {primary, secondary} - set(protocol.ENDPOINTS) or family not in weights:
      raise errors.ConfigError(f'{page_path}: family {family}: endpoints must be '
                               f'{protocol.ENDPOINTS} and it needs cells')
    families.append(FamilyPlan(family, int(order), primary, secondary, question,
                               tuple(weights[family])))
  return Plan(seeds, tuple(sorted(families, key=lambda f: f.order)))


Observations = Dict[Key, Dict[int, protocol.Observation]]


def load_cells(records: str, keys: Sequence[Key], seeds: Sequence[int],
               folders: Dict[str, str], moved: Optional[List] = None) -> Observations:
  """{(cell id, f): {seed: Observation}} of `keys` on `seeds`, each f's runs from the records
  subfolder folders[f] (no runs where it is missing), each run's best step the earliest of
  its tied lowest validation errors (record_readings.with_earliest_tied_best); `moved`
  collects (folder, cell id, seed, recorded step, step, recorded error, error) of the runs
  it moves."""
  found: Observations = {}
  for cell, f in keys:
    folder = os.path.join(records, folders[f])
    result = (results_lib.collect_cell(folder, cells_lib.get_cell(cell), seeds)
              if os.path.isdir(folder) else results_lib.CellResult(cells_lib.get_cell(cell)))
    replaced, changes = record_readings.with_earliest_tied_best({cell: result})
    if moved is not None:
      moved += [(folders[f],) + change for change in changes]
    found[(cell, f)] = protocol.observe(replaced[cell])
  return found


def load(records: str, plan: Plan, moved: Optional[List] = None) -> Observations:
  """{(cell id, f): {seed: Observation}} of the plan's cells from the records folder (its
  per_example/ and broadcast/ subfolders); only the plan's seeds."""
  return load_cells(records, plan.keys, plan.seeds, F_FOLDERS, moved)


@dataclasses.dataclass(frozen=True)
class FamilyResult:
  plan: FamilyPlan
  endpoint: str
  seeds: Tuple[int, ...]  # Splits with every cell's value at this endpoint.
  contrasts: Tuple[float, ...]
  mixed_cpus: Tuple[int, ...]  # Splits whose runs trained on more than one CPU.
  planned: int

  @property
  def n(self) -> int:
    return len(self.contrasts)

  @property
  def test(self) -> Optional[split_test.SplitTestResult]:
    return split_test.signed_rank_over_splits(self.contrasts) if self.contrasts else None

  @property
  def interval(self) -> Optional[paired_test.Interval]:
    return paired_test.hodges_lehmann(self.contrasts) if self.contrasts else None

  def without_mixed_cpus(self) -> 'FamilyResult':
    kept = [(s, d) for s, d in zip(self.seeds, self.contrasts) if s not in self.mixed_cpus]
    return dataclasses.replace(self, seeds=tuple(s for s, _ in kept),
                               contrasts=tuple(d for _, d in kept), mixed_cpus=())

  @property
  def per_split(self) -> str:
    """'+14.0 (20) / +9.1† (21) / …', † where the split's runs trained on several CPUs."""
    return ' / '.join(f'{d:+.1f}{"†" if s in self.mixed_cpus else ""} ({s})'
                      for s, d in zip(self.seeds, self.contrasts))


def family_result(plan: FamilyPlan, endpoint: str, seeds: Sequence[int],
                  observations: Observations) -> FamilyResult:
  kept, contrasts, mixed = [], [], []
  for seed in seeds:
    runs = {key: observations.get(key, {}).get(seed) for key, _ in plan.weights}
    values = {key: run.value(endpoint) if run else None for key, run in runs.items()}
    d = split_test.contrast(dict(plan.weights), values)
    if d is None:
      continue
    kept.append(seed)
    contrasts.append(d)
    if len({run.run.cpu for run in runs.values() if run.run.cpu is not None}) > 1:
      mixed.append(seed)
  return FamilyResult(plan, endpoint, tuple(kept), tuple(contrasts), tuple(mixed), len(seeds))


def simple_differences(plan: FamilyPlan) -> Tuple[Tuple[str, FamilyPlan], ...]:
  """For a family whose cells span both critic fs (an interaction), each f's part of its
  contrast alone: (f, the plan of that part), signed so that the family's first cell counts
  as it does in the family (for (3): the cost of Sobolev on f rather than f− under that f).
  Empty for a family on one f."""
  fs = list(dict.fromkeys(f for (_, f), _ in plan.weights))
  if len(fs) < 2:
    return ()
  (first_cell, _), first_weight = plan.weights[0]
  parts = []
  for f in fs:
    weights = tuple((key, w) for key, w in plan.weights if key[1] == f)
    sign = math.copysign(1, first_weight) * math.copysign(
        1, dict(weights).get((first_cell, f), first_weight))
    parts.append((f, dataclasses.replace(
        plan, weights=tuple((key, w * sign) for key, w in weights))))
  return tuple(parts)


def _cell_label(cell_id: str) -> str:
  """'Ω_F(f)+Ω_S(f−)' for table2/cifar10_fisher_f_sobolev_fneg: its table row's label."""
  return cells_lib.get_cell(cell_id).row_label.replace(', ', '+').replace('f-', 'f−')


def difference_text(weights: Sequence[Tuple[Key, float]]) -> str:
  """'Ω_F(f)+Ω_S(f) − Ω_F(f)+Ω_S(f−)': a contrast's cells with their signs (and their
  weights where not ±1)."""
  terms = []
  for (cell, _), w in weights:
    factor = '' if abs(w) == 1 else f'{abs(w):g}·'
    sign = ('− ' if w < 0 else '+ ') if terms else ('−' if w < 0 else '')
    terms.append(f'{sign}{factor}{_cell_label(cell)}')
  return ' '.join(terms)


@dataclasses.dataclass(frozen=True)
class Judgement:
  primary: Tuple[FamilyResult, ...]  # In the sequence's order.
  steps: Tuple[split_test.SequenceStep, ...]
  secondary: Tuple[FamilyResult, ...]
  # Per interaction family, each f's part alone at the primary endpoint: (f, result).
  simple: Tuple[Tuple[str, FamilyResult], ...] = ()


def judge(plan: Plan, observations: Observations) -> Judgement:
  """Every family at its primary endpoint in the fixed sequence, and at its secondary one.
  The sequence waits for every planned split: a family is tested once all its splits are in."""
  primary = tuple(family_result(f, f.primary, plan.seeds, observations) for f in plan.families)
  secondary = tuple(family_result(f, f.secondary, plan.seeds, observations)
                    for f in plan.families)
  steps = split_test.fixed_sequence([(r.plan.family, r.test if r.n == r.planned else None)
                                     for r in primary])
  simple = tuple((f, family_result(part, f_plan.primary, plan.seeds, observations))
                 for f_plan in plan.families for f, part in simple_differences(f_plan))
  return Judgement(primary, steps, secondary, simple)


def _p(value: Optional[float]) -> str:
  return '–' if value is None else protocol.p_text(value)


def results_table(judgement: Judgement) -> str:
  """The primary tests in the sequence's order, one row each."""
  lines = ['| order | family | endpoint | splits | contrast per split (seed) | '
           'Hodges–Lehmann [interval] | p | the other way | word |',
           '|---:|---|---|---:|---|---|---:|---:|---|']
  for result, step in zip(judgement.primary, judgement.steps):
    test, interval = result.test, result.interval
    word = step.word if result.n == result.planned else (
        f'waiting for its runs ({result.n} of {result.planned} splits)')
    lines.append(
        f'| {result.plan.order} | ({result.plan.family}) {result.plan.title} | '
        f'{result.endpoint} | {result.n} of {result.planned} | {result.per_split or "–"} | '
        f'{interval.text if interval else "–"} | {_p(test and test.p_value)} | '
        f'{_p(test and test.p_other)} | **{word}** |')
  return '\n'.join(lines)


def _reading(result: FamilyResult) -> str:
  if not result.n:
    return f'no split with every run yet (0 of {result.planned})'
  test = result.test
  return (f'{result.per_split}; Hodges–Lehmann {result.interval.text}; p = '
          f'{_p(test.p_value)}, the other way {_p(test.p_other)} (n = {result.n} splits)')


def readings(judgement: Judgement) -> List[str]:
  """Markdown items: per family the secondary endpoint, an interaction's part under each f
  alone (secondary) and, where splits mix CPUs, the primary result without them."""
  lines = []
  for primary, secondary in zip(judgement.primary, judgement.secondary):
    head = f'({primary.plan.family}) {primary.plan.title}'
    lines.append(f'- {head}, {secondary.endpoint} (secondary): {_reading(secondary)}.')
    for f, part in judgement.simple:
      if part.plan.family == primary.plan.family:
        lines.append(f'- ({part.plan.family}) under the {f} f alone, '
                     f'{difference_text(part.plan.weights)}, {part.endpoint} (secondary): '
                     f'{_reading(part)}.')
    if primary.mixed_cpus:
      lines.append(f'- {head}, {primary.endpoint}, without the splits whose runs mix CPUs '
                   f'({", ".join(map(str, primary.mixed_cpus))}): '
                   f'{_reading(primary.without_mixed_cpus())}.')
  return lines


def part(judgement: Judgement) -> str:
  """conclusions.md's confirmation part."""
  return results_table(judgement) + '\n\n' + '\n'.join(
      results_page.wrapped(item) for item in readings(judgement))


def _place(judgement: Judgement, family: str
           ) -> Tuple[FamilyResult, split_test.SequenceStep]:
  """`family`'s primary result and its step in the sequence."""
  for result, step in zip(judgement.primary, judgement.steps):
    if result.plan.family == family:
      return result, step
  raise KeyError(family)


def decided(judgement: Judgement, family: str) -> bool:
  """Whether the sequence has given `family` its word: its splits are all in (judge gives
  the sequence no result otherwise: NO_RUNS) and no family before it waits for its own."""
  _, step = _place(judgement, family)
  return step.word not in (split_test.WAITING, split_test.NO_RUNS)


def readme_line(title: str, judgement: Judgement, family: str, exploratory: str) -> str:
  """README's verdict item for one family: the confirmation's words, and until the
  confirmation has decided the family, the exploratory re-reading beside them (once it has,
  that reading stays in conclusions.md). An interaction family first says what its part
  under the paper's per-example f shows alone: that part is the conclusion as the paper
  states it, the interaction only what the family tested."""
  text = verdict_text(judgement, family)
  if not decided(judgement, family):
    text += f'; {exploratory}'
  paper_f = paper_f_text(judgement, family)
  if paper_f and decided(judgement, family):
    result, step = _place(judgement, family)
    return (f'- {title}: {paper_f}; what was tested is an interaction, that cost is larger '
            f'under the broadcast f: **{step.word}** (n={result.n} splits, '
            f'p={p_with_floor(result.test)})')
  return f'- {title}, as {TITLES[family]}: {text}'


def secondary_word(test: split_test.SplitTestResult) -> str:
  """A secondary reading's words at 0.05, unadjusted: it decides nothing."""
  if test.p_value < paired_test.LEVEL:
    return "in the paper's direction"
  if test.p_other < paired_test.LEVEL:
    return 'the other way'
  return paired_test.NOT_SHOWN


def paper_f_text(judgement: Judgement, family: str) -> Optional[str]:
  """An interaction family's part under the per-example f alone, in words: '**not shown at
  this n** under the paper's per-example f (Ω_F(f)+Ω_S(f) − Ω_F(f)+Ω_S(f−): +0.1 [-0.9,
  +1.1], p=0.344; secondary)'; None for a family on one f or before all its splits are in."""
  for f, part in judgement.simple:
    if part.plan.family == family and f == protocol.PER_EXAMPLE and part.n == part.planned:
      interval = part.interval
      return (f"**{secondary_word(part.test)}** under the paper's per-example f "
              f'({difference_text(part.plan.weights)}: {interval.estimate:+.1f} '
              f'[{interval.low:+.1f}, {interval.high:+.1f}], p={_p(part.test.p_value)}; '
              'secondary)')
  return None


def p_with_floor(test: split_test.SplitTestResult) -> str:
  """'0.016, the least 6 splits allow' where p is the least its splits can give."""
  text = _p(test.p_value)
  if math.isclose(test.p_value, test.smallest_p):
    text += f', the least {test.n} splits allow'
  return text


def verdict_text(judgement: Judgement, family: str) -> str:
  """README's words for one family: 'confirmation (splits 20–25): **supported** (n=6 splits,
  p=0.016; +9.1 [+6.8, +14.0] (96.9%))', or how many splits are in."""
  result, step = _place(judgement, family)
  if result.n < result.planned:
    return f'confirmation: {result.n} of {result.planned} label splits trained'
  if step.word == split_test.WAITING:
    return (f'confirmation: {result.n} of {result.planned} label splits trained, '
            f'{split_test.WAITING}')
  return (f'confirmation ({result.endpoint}): **{step.word}** (n={result.n} splits, '
          f'p={p_with_floor(result.test)}; {result.interval.text})')
