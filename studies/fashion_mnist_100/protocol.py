"""The paper's three conclusions as docs/results/protocol.md decides them.

The protocol page holds the table of primary pairs (between `<!-- begin primary pairs -->`
and `<!-- end primary pairs -->`); `read_pairs` reads it, so the pages judge exactly the
pairs the protocol fixed. Per family (1, 2, 3a, 3b) and endpoint ('best step': the test
error at the best validation step; 'late': the validation error averaged over the last
LATE_EVALUATIONS evaluations of the run's eval curve) one exact stratified sign-flip test
(paired_test.py), Holm-adjusted over every test run, gives the family its word; per pair the
Hodges–Lehmann estimate and interval, the median difference and the sign rule's verdict
(claims.py) are the secondary readings.
"""
import dataclasses
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl import errors
from tf_ipmssl.run_dir import config_formats
from tf_ipmssl.run_dir import run_files
from studies.fashion_mnist_100 import claims
from studies.fashion_mnist_100 import paired_test
from studies.fashion_mnist_100 import results_page
from tf_ipmssl.sweep import results as results_lib

PAGE = 'protocol.md'
PAIRS_PART = 'primary pairs'
PER_EXAMPLE, BROADCAST = 'per-example', 'broadcast'
BROADCAST_RECORDS = 'broadcast_f_records'  # Beside the pages, under docs/results.
FAMILIES = ('1', '2', '3a', '3b')
FAMILY_TITLES = {
    '1': 'K+1 below plain (Fisher, Sobolev, Fisher + Sobolev)',
    '2': 'Batch norm above each other Fisher normalization',
    '3a': 'Sobolev on the full f above Sobolev on f−, Fisher fixed (per-example f)',
    '3b': 'Sobolev on the full f above Sobolev on f−, Fisher fixed (broadcast f)'}
BEST, LATE = 'best step', 'late'
ENDPOINTS = (BEST, LATE)
LATE_EVALUATIONS = 4
VALIDATION_CURVE = 'eval/validation_error'
RAMPUP_MARK = '‡'

Results = Dict[str, results_lib.CellResult]


@dataclasses.dataclass(frozen=True)
class PrimaryPair:
  """One row of the protocol's table: the paper says `higher`'s error is above `lower`'s."""
  family: str
  higher: str
  higher_f: str
  lower: str
  lower_f: str
  seeds: Tuple[int, ...]

  @property
  def name(self) -> str:
    def side(cell, f):
      return claims.short_name(cell) + (' (broadcast f)' if f == BROADCAST else '')
    return f'{side(self.higher, self.higher_f)} − {side(self.lower, self.lower_f)}'


def seed_list(text: str) -> Tuple[int, ...]:
  first, _, last = text.partition('-')
  return tuple(range(int(first), int(last or first) + 1))


def read_pairs(page_path: str) -> Tuple[PrimaryPair, ...]:
  """The primary pairs of the protocol page's table."""
  with open(page_path) as f:
    text = f.read()
  body = results_page.part(text, PAIRS_PART, page_path)
  pairs = []
  for line in body.splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if len(cells) != 6 or cells[0] in ('family', '') or set(cells[0]) <= set('-'):
      continue
    family, higher, higher_f, lower, lower_f, seeds = cells
    if family not in FAMILIES or {higher_f, lower_f} - {PER_EXAMPLE, BROADCAST}:
      raise errors.ConfigError(f'{page_path}: a primary pair the protocol does not define: '
                               f'{line.strip()}')
    pairs.append(PrimaryPair(family, higher, higher_f, lower, lower_f, seed_list(seeds)))
  return tuple(pairs)


# ---- Per-run numbers --------------------------------------------------------------------

def late_validation_error(run: results_lib.RunResult) -> Optional[float]:
  """The validation error averaged over the run's last LATE_EVALUATIONS evaluations (its
  eval curve; a step evaluated twice across sessions counts once, the later value); None
  where the run keeps no curve."""
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  if not run.has_record:
    return None
  curve = event_files.read_eval_curves(run.model_dir).get(VALIDATION_CURVE, {})
  if len(curve) < LATE_EVALUATIONS:
    return None
  return statistics.fmean(curve[s] for s in sorted(curve)[-LATE_EVALUATIONS:])


def _best_step_and_rampup(run: results_lib.RunResult) -> Tuple[Optional[int], Optional[bool]]:
  """(the run's best validation step, whether it came before the IPM ramp-up ended: fewer
  critic updates before it than `ipm_rampup_updates`), from its record's metrics.json and
  run_config.json; None for what the record does not say (no record; no IPM term or
  ramp-up, as for the supervised critic)."""
  if not run.has_record or not run.model_dir:
    return None, None
  metrics = run_files.read_metrics(run.model_dir, unreadable_ok=True) or {}
  step = run.best_step if run.best_step is not None else (metrics.get('best') or {}).get('step')
  if step is None or step < 0:
    return None, None
  config = run_files.read_json(run.model_dir, run_files.RUN_CONFIG_FILE, unreadable_ok=True)
  config = config_formats.upgrade(config) if config else {}
  train = config.get('train', {})
  rampup = config.get('ssl', {}).get('ipm_rampup_updates')
  updates = train.get('critic_updates')
  steps = metrics.get('total_steps')
  if train.get('mode', 'ssl') != 'ssl' or not rampup or not updates or not steps:
    return int(step), None
  return int(step), step * updates / steps < rampup


def best_step(run: results_lib.RunResult) -> Optional[int]:
  """The run's best validation step (metrics.json); None without a record."""
  return _best_step_and_rampup(run)[0]


def best_step_in_rampup(run: results_lib.RunResult) -> Optional[bool]:
  """Whether the run's best validation step came before the IPM ramp-up ended; None where
  its record does not say (see _best_step_and_rampup)."""
  return _best_step_and_rampup(run)[1]


def best_step_text(run: results_lib.RunResult) -> str:
  """'250 ‡' (inside the ramp-up), '900', or '–' where the record does not say."""
  step, in_rampup = _best_step_and_rampup(run)
  if step is None:
    return '–'
  return f'{step}' + (f' {RAMPUP_MARK}' if in_rampup else '')


def training_commit(run: results_lib.RunResult) -> Optional[str]:
  """The commit that trained the run (versions.json), its first 7 digits."""
  if not run.has_record or not run.model_dir:
    return None
  versions = run_files.read_json(run.model_dir, run_files.VERSIONS_FILE,
                                 unreadable_ok=True) or {}
  commit = (versions.get('source') or {}).get('commit')
  return commit[:7] if commit else None


@dataclasses.dataclass(frozen=True)
class Observation:
  """One run as a pair uses it: the run, and what its record adds."""
  run: results_lib.RunResult
  late: Optional[float]  # Late validation error (%), None without an eval curve.
  in_rampup: Optional[bool]
  commit: Optional[str]

  def value(self, endpoint: str) -> Optional[float]:
    return self.run.test_error if endpoint == BEST else self.late


def observe(result: results_lib.CellResult) -> Dict[int, Observation]:
  return {run.seed: Observation(run, late_validation_error(run), best_step_in_rampup(run),
                                training_commit(run))
          for run in result.runs}


# ---- Pairs, families, words -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PairResult:
  pair: PrimaryPair
  endpoint: str
  seeds: Tuple[int, ...]  # Protocol seeds both cells have, with a value at this endpoint.
  diffs: Tuple[float, ...]  # higher − lower, per seed.
  in_rampup: Tuple[str, ...]  # 'higher seed 1', ...: best steps inside the ramp-up.
  across_cpus: Tuple[bool, ...]
  # Each run it pairs: (cell id, f, seed, its training commit or None).
  runs: Tuple[Tuple[str, str, int, Optional[str]], ...] = ()

  @property
  def n(self) -> int:
    return len(self.diffs)

  @property
  def planned(self) -> int:
    return len(self.pair.seeds)

  @property
  def interval(self) -> Optional[paired_test.Interval]:
    return paired_test.hodges_lehmann(self.diffs) if self.diffs else None

  @property
  def sign_rule(self) -> str:
    return claims.ordered_verdict(self.diffs)

  @property
  def text(self) -> str:
    """'bn − none: +4.9 / +0.1 / … (n=5 of 5); HL +2.1 [+0.1, +4.9] (93.75%); median
    +1.2; sign rule: holds; ‡ …'."""
    if not self.diffs:
      return f'{self.pair.name}: no seed with both runs yet (0 of {self.planned})'
    per_seed = ' / '.join(f'{d:+.1f}' + (claims.CPU_MARK if m else '')
                          for d, m in zip(self.diffs, self.across_cpus))
    text = (f'{self.pair.name}: {per_seed} (seeds {seed_range(self.seeds)}, n={self.n} of '
            f'{self.planned}); Hodges–Lehmann {self.interval.text}; median '
            f'{statistics.median(self.diffs):+.1f}; sign rule: {self.sign_rule}')
    if self.in_rampup:
      text += f'; {RAMPUP_MARK} best step inside the ramp-up: {", ".join(self.in_rampup)}'
    return text


def seed_range(seeds: Sequence[int]) -> str:
  """'0–4' for three or more consecutive seeds, else '0, 2'."""
  if seeds and list(seeds) == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
    return f'{seeds[0]}–{seeds[-1]}'
  return ', '.join(map(str, seeds))


def pair_result(pair: PrimaryPair, endpoint: str, higher: Dict[int, Observation],
                lower: Dict[int, Observation]) -> PairResult:
  seeds, diffs, rampup, across, runs = [], [], [], [], []
  for seed in pair.seeds:
    a, b = higher.get(seed), lower.get(seed)
    if a is None or b is None or a.value(endpoint) is None or b.value(endpoint) is None:
      continue
    seeds.append(seed)
    diffs.append(a.value(endpoint) - b.value(endpoint))
    across.append(results_lib.different_cpus(a.run, b.run))
    runs += [(pair.higher, pair.higher_f, seed, a.commit),
             (pair.lower, pair.lower_f, seed, b.commit)]
    if endpoint == BEST:
      rampup += [f'{claims.short_name(cell)} seed {seed}' for cell, o
                 in ((pair.higher, a), (pair.lower, b)) if o.in_rampup]
  return PairResult(pair, endpoint, tuple(seeds), tuple(diffs), tuple(rampup), tuple(across),
                    tuple(runs))


@dataclasses.dataclass(frozen=True)
class FamilyResult:
  family: str
  endpoint: str
  pairs: Tuple[PairResult, ...]
  test: Optional[paired_test.SignFlipResult]  # None without any paired difference.
  adjusted_p: Optional[float] = None
  adjusted_p_other: Optional[float] = None

  @property
  def n(self) -> int:
    return sum(p.n for p in self.pairs)

  @property
  def planned(self) -> int:
    return sum(p.planned for p in self.pairs)

  @property
  def word(self) -> str:
    if self.test is None:
      return 'no runs'
    return paired_test.word(self.adjusted_p, self.adjusted_p_other)

  @property
  def trained_by(self) -> str:
    """'Its 16 runs: 12 trained by bbbb1c3, 4 with no record of their commit (runs.csv
    rows)' (each run once, however many pairs use it)."""
    commits = [commit for *_, commit in {run for pair in self.pairs for run in pair.runs}]
    counts = {c: commits.count(c) for c in set(commits)}
    parts = [f'{n} trained by {c}' for c, n in sorted(
        (c, n) for c, n in counts.items() if c is not None)]
    if None in counts:
      parts.append(f'{counts[None]} with no record of their commit (runs.csv rows)')
    return f'Its {len(commits)} runs: ' + ', '.join(parts)

  @property
  def summary(self) -> str:
    """'supported (adjusted p = 0.016; p = 0.002, n = 9 of 9)'."""
    if self.test is None:
      return f'no runs at this endpoint (0 of {self.planned} differences)'
    return (f'{self.word} (adjusted p = {p_text(self.adjusted_p)}; p = {p_text(self.test.p_value)}, '
            f'the other way {p_text(self.test.p_other)}; n = {self.n} of {self.planned})')


def p_text(value: float) -> str:
  return f'{value:.2g}' if value < 0.01 else f'{value:.3f}'


def observations(pairs: Sequence[PrimaryPair], per_example: Results, broadcast: Results
                 ) -> Dict[Tuple[str, str], Dict[int, Observation]]:
  """{(cell id, f): {seed: Observation}} for every cell the pairs name."""
  found = {}
  for pair in pairs:
    for cell, f in ((pair.higher, pair.higher_f), (pair.lower, pair.lower_f)):
      if (cell, f) not in found:
        source = broadcast if f == BROADCAST else per_example
        result = source.get(cell)
        found[(cell, f)] = observe(result) if result else {}
  return found


def judge(pairs: Sequence[PrimaryPair], per_example: Results, broadcast: Results
          ) -> Dict[Tuple[str, str], FamilyResult]:
  """{(family, endpoint): its result}, Holm-adjusted over every test that has runs."""
  seen = observations(pairs, per_example, broadcast)
  found = {}
  for endpoint in ENDPOINTS:
    for family in FAMILIES:
      results = tuple(pair_result(p, endpoint, seen[(p.higher, p.higher_f)],
                                  seen[(p.lower, p.lower_f)])
                      for p in pairs if p.family == family)
      strata = [r.diffs for r in results if r.diffs]
      test = paired_test.sign_flip_test(strata) if strata else None
      found[(family, endpoint)] = FamilyResult(family, endpoint, results, test)
  tested = [key for key, r in found.items() if r.test is not None]
  adjusted = paired_test.holm([found[k].test.p_value for k in tested])
  adjusted_other = paired_test.holm([found[k].test.p_other for k in tested])
  for key, p, p_other in zip(tested, adjusted, adjusted_other):
    found[key] = dataclasses.replace(found[key], adjusted_p=p, adjusted_p_other=p_other)
  return found


# ---- Page text --------------------------------------------------------------------------

CONCLUSION_FAMILIES = {1: ('1',), 2: ('2',), 3: ('3a', '3b')}


def family_items(judged: Dict[Tuple[str, str], FamilyResult], family: str) -> List[str]:
  """Markdown items: the family's result per endpoint, then one nested line per pair."""
  lines = []
  for endpoint in ENDPOINTS:
    result = judged[(family, endpoint)]
    trained = f' {result.trained_by}.' if result.test is not None else ''
    lines.append(f'- **({family}) {FAMILY_TITLES[family]}, {endpoint}**: {result.summary}.'
                 + trained)
    lines += [f'  - {pair.text}' for pair in result.pairs]
  return lines


def tests_table(judged: Dict[Tuple[str, str], FamilyResult]) -> str:
  """Every test of the protocol in one table."""
  lines = ['| family | endpoint | differences | T | p | the other way | Holm-adjusted p | '
           'word |', '|---|---|---:|---:|---:|---:|---:|---|']
  for (family, endpoint), r in judged.items():
    if r.test is None:
      lines.append(f'| {family} | {endpoint} | 0 of {r.planned} | – | – | – | – | no runs |')
      continue
    lines.append(f'| {family} | {endpoint} | {r.n} of {r.planned} | {r.test.statistic:+.2f} | '
                 f'{p_text(r.test.p_value)} | {p_text(r.test.p_other)} | {p_text(r.adjusted_p)} | '
                 f'{r.word} |')
  return '\n'.join(lines)


def verdict_line(title: str, conclusion: int,
                 judged: Dict[Tuple[str, str], FamilyResult]) -> str:
  """README's line: the word per family and endpoint with n and the adjusted p (the planned
  n of each is on conclusions.md: README keeps to ten figures a line)."""
  parts = []
  for family in CONCLUSION_FAMILIES[conclusion]:
    per_endpoint = []
    for endpoint in ENDPOINTS:
      r = judged[(family, endpoint)]
      any_runs = judged[(family, BEST)].test is not None
      per_endpoint.append(
          f'{endpoint}: no runs with an eval curve' if r.test is None and any_runs
          else f'{endpoint}: no runs yet' if r.test is None
          else f'{endpoint}: **{r.word}** (n={r.n}, adjusted p={p_text(r.adjusted_p)})')
    label = {'3a': 'per-example f: ', '3b': 'broadcast f: '}.get(family, '')
    parts.append(label + '; '.join(per_endpoint))
  return f'{title}: ' + ' — '.join(parts)
