"""The longer-budget reading of the confirmation (docs/results/confirmation.md): does the
Sobolev constraint on the per-example full f start to cost with longer training?

Per-example Ω_F(f)+Ω_S(f) and Ω_F(f)+Ω_S(f−), and broadcast Ω_F(f)+Ω_S(f), trained at 4× the
critic updates (3,600 steps) on splits 20 and 21 (records: confirmation_records/
longer_per_example and longer_broadcast), beside the same cells' 900-step runs of the
confirmation on those splits. Per split and budget:

  per-example cost = per-example Ω_F(f)+Ω_S(f) − per-example Ω_F(f)+Ω_S(f−)
  broadcast cost   = broadcast Ω_F(f)+Ω_S(f) − per-example Ω_F(f)+Ω_S(f)

at the best validation step (family (3)'s primary endpoint) and late
(protocol.late_validation_error). Two splits: a reading, with no p value.
"""
import dataclasses
import textwrap
from typing import Dict, List, Optional, Sequence, Tuple

from studies.fashion_mnist_100 import confirmation
from studies.fashion_mnist_100 import protocol
from studies.fashion_mnist_100 import results_page

PE, BC = protocol.PER_EXAMPLE, protocol.BROADCAST
F_SF, F_SFNEG = 'table2/cifar10_fisher_f_sobolev_f', 'table2/cifar10_fisher_f_sobolev_fneg'
SEEDS = (20, 21)
FOLDERS = {PE: 'longer_per_example', BC: 'longer_broadcast'}  # Under the records.
CELLS = ((F_SF, PE), (F_SFNEG, PE), (F_SF, BC))
SHORT, LONG = '900 steps', '3,600 steps'
BUDGETS = (SHORT, LONG)

Observations = confirmation.Observations


def load(records: str, moved: Optional[List] = None) -> Observations:
  """{(cell id, f): {seed: Observation}} of the longer runs under the records folder."""
  return confirmation.load_cells(records, CELLS, SEEDS, FOLDERS, moved)


def _difference(a: Optional[float], b: Optional[float]) -> Optional[float]:
  return None if a is None or b is None else a - b


@dataclasses.dataclass(frozen=True)
class Split:
  """One split at one budget: each cell's value at the endpoint (None where not run)."""
  seed: int
  budget: str
  values: Dict[confirmation.Key, Optional[float]]
  best_steps: Dict[confirmation.Key, Optional[int]]

  @property
  def per_example_cost(self) -> Optional[float]:
    return _difference(self.values[(F_SF, PE)], self.values[(F_SFNEG, PE)])

  @property
  def broadcast_cost(self) -> Optional[float]:
    return _difference(self.values[(F_SF, BC)], self.values[(F_SF, PE)])


def splits(short: Observations, long: Observations, endpoint: str) -> List[Split]:
  """Each of SEEDS at each budget: `short` the confirmation's 900-step runs, `long` these."""
  found = []
  for seed in SEEDS:
    for budget, observations in ((SHORT, short), (LONG, long)):
      runs = {key: observations.get(key, {}).get(seed) for key in CELLS}
      found.append(Split(seed, budget,
                         {key: run.value(endpoint) if run else None
                          for key, run in runs.items()},
                         {key: protocol.best_step(run.run) if run else None
                          for key, run in runs.items()}))
  return found


def _number(value: Optional[float], sign: bool = False) -> str:
  if value is None:
    return '–'
  return f'{value:+.2f}' if sign else f'{value:.2f}'


def table(found: Sequence[Split], endpoint: str) -> str:
  """One row per split and budget: the three cells (with the best step at the best step),
  the per-example cost and the broadcast cost."""
  lines = ['| split | budget | per-example Ω_F(f)+Ω_S(f) | per-example Ω_F(f)+Ω_S(f−) | '
           'per-example cost | broadcast Ω_F(f)+Ω_S(f) | broadcast cost |',
           '|---:|---|---:|---:|---:|---:|---:|']
  for split in found:
    cells = []
    for key in CELLS:
      text = _number(split.values[key])
      step = split.best_steps[key]
      if endpoint == protocol.BEST and split.values[key] is not None and step is not None:
        text += f' (step {step:,})'
      cells.append(text)
    lines.append(f'| {split.seed} | {split.budget} | {cells[0]} | {cells[1]} | '
                 f'{_number(split.per_example_cost, True)} | {cells[2]} | '
                 f'{_number(split.broadcast_cost, True)} |')
  return '\n'.join(lines)


def changes(found: Sequence[Split]) -> List[Tuple[int, Optional[float], Optional[float]]]:
  """(split, change of the per-example cost from 900 to 3,600 steps, the same of the
  broadcast cost) per split."""
  by_seed: Dict[int, Dict[str, Split]] = {}
  for split in found:
    by_seed.setdefault(split.seed, {})[split.budget] = split
  return [(seed, _difference(b[LONG].per_example_cost, b[SHORT].per_example_cost),
           _difference(b[LONG].broadcast_cost, b[SHORT].broadcast_cost))
          for seed, b in sorted(by_seed.items())]


def confound(short: Observations, long: Observations, step: int = 900
             ) -> Tuple[List[str], List[str], List[float]]:
  """(the CPUs of the 900-step runs, those of the longer runs, |validation error at `step`
  of a per-example longer run − that of its 900-step run| for each cell and split with
  both): where the CPUs differ, what a move between budgets carries besides the budget."""
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  short_cpus, long_cpus, gaps = set(), set(), []
  for key, by_seed in long.items():
    for seed, run in by_seed.items():
      other = short.get(key, {}).get(seed)
      if other is None:
        continue
      short_cpus.add(other.run.cpu or 'unknown')
      long_cpus.add(run.run.cpu or 'unknown')
      a = event_files.read_eval_curves(run.run.model_dir).get(protocol.VALIDATION_CURVE, {})
      b = event_files.read_eval_curves(other.run.model_dir).get(protocol.VALIDATION_CURVE, {})
      if step in a and step in b and key[1] == PE:
        gaps.append(abs(a[step] - b[step]))
  return sorted(short_cpus), sorted(long_cpus), sorted(gaps)


def confound_text(short: Observations, long: Observations) -> Optional[str]:
  """The CPUs in words where the two budgets trained on different ones; None otherwise."""
  short_cpus, long_cpus, gaps = confound(short, long)
  if not gaps or set(short_cpus) == set(long_cpus):
    return None
  return (f'The 900-step runs trained on {" and ".join(short_cpus)}, the 3,600-step runs on '
          f'{" and ".join(long_cpus)}: at step 900 the per-example '
          f'runs\' validation errors already differ by {gaps[0]:.2f} to {gaps[-1]:.2f} points '
          'between the two, so each move below mixes the budget with the CPU.')


def part(short: Observations, long: Observations) -> str:
  """conclusions.md's longer-budget part: the CPUs, a table per endpoint and the changes per
  split."""
  runs = sum(len(by_seed) for by_seed in long.values())
  blocks = [f'{runs} of {len(CELLS) * len(SEEDS)} longer runs recorded.']
  cpus = confound_text(short, long)
  if cpus:
    blocks.append(textwrap.fill(cpus, results_page.WIDTH, break_long_words=False,
                                break_on_hyphens=False))
  for endpoint in (protocol.BEST, protocol.LATE):
    found = splits(short, long, endpoint)
    lines = [f'At the {endpoint} (test error % at the best validation step)' if
             endpoint == protocol.BEST else
             f'Late (validation error %, the mean of the last {protocol.LATE_EVALUATIONS} '
             'evaluations)', '', table(found, endpoint), '']
    for seed, per_example, broadcast in changes(found):
      if per_example is None and broadcast is None:
        continue
      lines.append(f'- Split {seed}, from 900 to 3,600 steps: the per-example cost moves '
                   f'{_number(per_example, True)} points, the broadcast cost '
                   f'{_number(broadcast, True)}.')
    blocks.append('\n'.join(lines))
  return '\n\n'.join(blocks)


def verdict_text(short: Observations, long: Observations) -> str:
  """README's words: how many longer runs are in, then each split's change of the
  per-example cost at the best step."""
  runs = sum(len(by_seed) for by_seed in long.values())
  planned = len(CELLS) * len(SEEDS)
  if runs < planned:
    return f'{runs} of {planned} runs trained'
  moves = changes(splits(short, long, protocol.BEST))
  text = 'the per-example cost of Sobolev on f moves ' + ' and '.join(
      _number(per_example, True) for _, per_example, _ in moves) + ' points (best step)'
  if confound_text(short, long):
    text += ', budget and CPU mixed (the two budgets trained on different CPUs)'
  return text
