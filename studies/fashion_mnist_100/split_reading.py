"""The earlier runs (docs/results/protocol.md's) re-read with the label split as the unit:
exploratory, since these runs chose the confirmation's cells, endpoints and order.

Each reading is one contrast per split over cells and weights (split_test.contrast), tested
by the exact signed-rank test over splits where its cells are disjoint runs of a split.
Batch norm against the other Fisher normalizations shares batch norm's run of a split among
five pairs: its reading permutes the cell labels within each split instead
(split_test.rank_within_splits). The p values are unadjusted and decide nothing.
"""
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from studies.fashion_mnist_100 import confirmation
from studies.fashion_mnist_100 import paired_test
from studies.fashion_mnist_100 import protocol
from studies.fashion_mnist_100 import split_test

PE, BC = protocol.PER_EXAMPLE, protocol.BROADCAST
T1, T2, T3 = 'table1/cifar10_', 'table2/cifar10_', 'table3/cifar10_'


def _pairs(*pairs: Tuple[str, str, str, str], scale: float = 1.0
           ) -> Tuple[Tuple[confirmation.Key, float], ...]:
  """Weights of (higher, its f, lower, its f) pairs averaged: each pair's difference × scale."""
  weight = scale / len(pairs)
  found = []
  for higher, higher_f, lower, lower_f in pairs:
    found += [((higher, higher_f), weight), ((lower, lower_f), -weight)]
  return tuple(found)


@dataclasses.dataclass(frozen=True)
class Reading:
  name: str
  seeds: Tuple[int, ...]
  weights: Tuple[Tuple[confirmation.Key, float], ...]


F_SF, F_SFNEG = T2 + 'fisher_f_sobolev_f', T2 + 'fisher_f_sobolev_fneg'
FPOS_SF, FPOS_SFNEG = T2 + 'fisher_fpos_sobolev_f', T2 + 'fisher_fpos_sobolev_fneg'
READINGS = (
    Reading('(1) plain − K+1, the mean over Fisher, Sobolev, Fisher + Sobolev', tuple(range(3)),
            _pairs(*((f'{T1}{ipm}_plain', PE, f'{T1}{ipm}_kplus1', PE)
                     for ipm in ('fisher', 'sobolev', 'fisher_sobolev')))),
    Reading('(2) batch norm − none (Fisher)', tuple(range(5)),
            _pairs((T3 + 'batch_norm_fisher', PE, T3 + 'none_fisher', PE))),
    Reading('(3a) Sobolev on f − on f−, per-example f, the mean over Fisher on f and on f+',
            tuple(range(8)), _pairs((F_SF, PE, F_SFNEG, PE), (FPOS_SF, PE, FPOS_SFNEG, PE))),
    Reading('(3b) the same, broadcast f (Ω_F(f+) + Ω_S(f−) per-example)', tuple(range(5)),
            _pairs((F_SF, BC, F_SFNEG, BC), (FPOS_SF, BC, FPOS_SFNEG, PE))),
    Reading('(3) the interaction: Ω_F(f) + Ω_S(f) − Ω_F(f) + Ω_S(f−), broadcast − per-example',
            tuple(range(5)), (((F_SF, BC), 1.0), ((F_SFNEG, BC), -1.0), ((F_SF, PE), -1.0),
                              ((F_SFNEG, PE), 1.0))),
)
BATCH_NORM = (T3 + 'batch_norm_fisher', PE)
OTHER_NORMALIZATIONS = tuple((T3 + name + '_fisher', PE) for name in (
    'layer_norm_singleton_per_channel', 'layer_norm_singleton_per_pixel',
    'layer_norm_per_channel_per_channel', 'layer_norm_per_channel_per_pixel', 'none'))
BATCH_NORM_NAME = '(2) batch norm against every other Fisher normalization (within-split ranks)'


@dataclasses.dataclass(frozen=True)
class ReadingResult:
  name: str
  endpoint: str
  seeds: Tuple[int, ...]
  contrasts: Tuple[float, ...]  # Empty for the within-split reading.
  test: Optional[split_test.SplitTestResult]

  @property
  def text_row(self) -> str:
    per_split = ' / '.join(f'{d:+.1f}' for d in self.contrasts) or 'ranks (below)'
    interval = (paired_test.hodges_lehmann(self.contrasts).text if self.contrasts else '–')
    if self.test is None:
      return f'| {self.name} | {self.endpoint} | 0 | – | – | – | – | – |'
    return (f'| {self.name} | {self.endpoint} | {self.test.n} '
            f'({protocol.seed_range(self.seeds)}) | {per_split} | {interval} | '
            f'{protocol.p_text(self.test.p_value)} | {protocol.p_text(self.test.p_other)} | '
            f'{protocol.p_text(self.test.smallest_p)} |')


def _contrast_reading(reading: Reading, endpoint: str,
                      observations: confirmation.Observations) -> ReadingResult:
  plan = confirmation.FamilyPlan(reading.name, 0, endpoint, endpoint, reading.name,
                                 reading.weights)
  result = confirmation.family_result(plan, endpoint, reading.seeds, observations)
  return ReadingResult(reading.name, endpoint, result.seeds, result.contrasts, result.test)


def _batch_norm_reading(endpoint: str, observations: confirmation.Observations
                        ) -> ReadingResult:
  seeds, splits = [], []
  for seed in range(5):
    value = lambda key: (observations.get(key, {}).get(seed).value(endpoint)  # pylint: disable=cell-var-from-loop
                         if observations.get(key, {}).get(seed) else None)
    higher = value(BATCH_NORM)
    others = [v for v in map(value, OTHER_NORMALIZATIONS) if v is not None]
    if higher is None or not others:
      continue
    seeds.append(seed)
    splits.append([higher] + others)
  test = split_test.rank_within_splits(splits) if splits else None
  return ReadingResult(BATCH_NORM_NAME, endpoint, tuple(seeds), (), test)


def read(observations: confirmation.Observations) -> List[ReadingResult]:
  """Every reading at both endpoints, in READINGS' order, batch norm's shared-run reading
  after (2)."""
  found = []
  for reading in READINGS:
    for endpoint in protocol.ENDPOINTS:
      found.append(_contrast_reading(reading, endpoint, observations))
    if reading.name.startswith('(2)'):
      found += [_batch_norm_reading(e, observations) for e in protocol.ENDPOINTS]
  return found


def keys() -> Tuple[confirmation.Key, ...]:
  """Every (cell id, f) the readings use."""
  found = [key for reading in READINGS for key, _ in reading.weights]
  return tuple(dict.fromkeys(found + [BATCH_NORM, *OTHER_NORMALIZATIONS]))


def part(results: Sequence[ReadingResult]) -> str:
  """conclusions.md's exploratory part: one row per reading and endpoint."""
  lines = ['| reading | endpoint | splits | contrast per split | Hodges–Lehmann [interval] | '
           'p | the other way | least p possible |', '|---|---|---|---|---|---:|---:|---:|']
  return '\n'.join(lines + [r.text_row for r in results])


def observations(per_example: Dict, broadcast: Dict) -> confirmation.Observations:
  """{(cell id, f): {seed: Observation}} of every key the readings use, from the Tables 1-3
  results (per-example) and the broadcast-f records."""
  found = {}
  for cell, f in keys():
    result = (broadcast if f == BC else per_example).get(cell)
    found[(cell, f)] = protocol.observe(result) if result else {}
  return found


# The reading README's verdict line gives per conclusion: the confirmation's contrast at its
# primary endpoint, on the earlier splits.
VERDICT_READINGS = {'1': (READINGS[0].name, protocol.BEST),
                    '2': (READINGS[1].name, protocol.LATE),
                    '3': (READINGS[4].name, protocol.BEST)}


def verdict_text(results: Sequence[ReadingResult], conclusion: str) -> str:
  """'exploratory, the earlier splits 0–4 (unadjusted): p=0.031 (n=5 splits, least
  possible 0.031)'."""
  name, endpoint = VERDICT_READINGS[conclusion]
  result = next(r for r in results if (r.name, r.endpoint) == (name, endpoint))
  if result.test is None:
    return 'exploratory: no runs'
  return (f'exploratory, the earlier splits {protocol.seed_range(result.seeds)} '
          f'(unadjusted): p={protocol.p_text(result.test.p_value)} '
          f'(n={result.test.n} splits, least possible {protocol.p_text(result.test.smallest_p)})')
