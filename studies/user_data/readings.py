"""The study's secondary readings (studies/user_data/README.md, "Secondary readings"): numbers
beside the six questions, with no test and no verdict word. Each is read from the records
alone, as `verdicts.endpoint` reads the questions' endpoints:

- `gains`: the SSL gain (supervised − K+1) per condition and split, two conditions the
  questions test (imbalance, mismatch) and two references (balanced, 0% foreign);
- `selection_rows`: per trained cell, what the last step and the 10-per-class subset's step
  cost against the 5,000-image validation split's step;
- `class_rows` and `rare_minus_common`: the gain per class, and whether SSL helps most where
  labels are fewest (the imbalanced part's rare-minus-common gain less the balanced part's);
- `score_rows`: each foreign-image score's AUROC and rejected shares.

`readings_part` writes them as the page's readings part.
"""
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from studies.fashion_mnist_100 import paired_test
from studies.user_data import plan as plan_lib
from studies.user_data import verdicts
from tf_ipmssl.data import splits as splits_lib
from tf_ipmssl.run_dir import run_files

K_PLUS_1, SUPERVISED = 'table1/cifar10_fisher_kplus1_entropy', 'appendix_c/cifar10_none_4k'
LABELS = 100  # The imbalanced part's labels (the page's "Conditions and cells").
RATIO_BINDING = 'build_ssl_data.imbalance_ratio'
EXTREME_CLASSES = 3  # The rarest and the most common three (the page's per-class reading).


@dataclasses.dataclass(frozen=True)
class Condition:
  """The gain supervised − K+1 on `endpoint`, the supervised run from `supervised_part`,
  the K+1 run from `ssl_part`; `reading` says what it is on the page."""
  name: str
  supervised_part: str
  ssl_part: str
  endpoint: str
  reading: str


CONDITIONS = (
    Condition('balanced labels', 'balanced', 'balanced', 'test error', 'reference'),
    Condition('imbalanced labels', 'imbalanced', 'imbalanced', 'balanced test error',
              'question imbalance'),
    Condition('6 classes, 0% foreign', 'six_known_0', 'six_known_0', 'test error',
              'reference'),
    Condition('6 classes, 100% foreign', 'six_known_0', 'six_known_100', 'test error',
              'question mismatch'),
)
# The runs whose records measure the foreign-image scores, and their names on the page.
SCORED = (('K+1, 0% foreign', 'six_known_0', K_PLUS_1),
          ('K+1, 100% foreign', 'six_known_100', K_PLUS_1),
          ('supervised', 'six_known_0', SUPERVISED))


def _metrics(records: str, part: str, cell: str, seed: int) -> dict:
  return run_files.read_json(plan_lib.record_dir(records, part, cell, seed),
                             run_files.METRICS_FILE, unreadable_ok=True) or {}


def _value(records: str, part: str, cell: str, seed: int, endpoint: str) -> Optional[float]:
  return verdicts.endpoint(plan_lib.record_dir(records, part, cell, seed), endpoint)


def gains(plan: plan_lib.Plan, records: str) -> List[Tuple[Condition, Dict[int, Optional[float]]]]:
  """Per condition, {split: supervised − K+1 (points of error), None while a run is missing}."""
  found = []
  for condition in CONDITIONS:
    per_split = {}
    for seed in plan.seeds:
      supervised = _value(records, condition.supervised_part, SUPERVISED, seed,
                          condition.endpoint)
      ssl = _value(records, condition.ssl_part, K_PLUS_1, seed, condition.endpoint)
      per_split[seed] = None if supervised is None or ssl is None else supervised - ssl
    found.append((condition, per_split))
  return found


def _present(values) -> List[float]:
  return [v for v in values if v is not None]


def _summary(values: Sequence[float], places: int = 1) -> str:
  """'+2.1 [−0.6, +4.3] (95%)' (Hodges-Lehmann and its exact interval) of the values; with
  fewer than two, the value alone ('' for none)."""
  if not values:
    return ''
  if len(values) == 1:
    return f'{values[0]:+.{places}f}'
  return paired_test.hodges_lehmann(list(values), verdicts.CONFIDENCE).formatted(places)


@dataclasses.dataclass(frozen=True)
class SelectionRow:
  """A trained cell's costs of model selection, per split: the last step's test error and
  the subset's step's, each minus the test error at the 5,000-image split's step."""
  part: str
  cell: str
  last: Dict[int, float]
  subset: Dict[int, float]


def selection_rows(plan: plan_lib.Plan, records: str) -> List[SelectionRow]:
  rows = []
  for row in plan.cells:
    last, subset = {}, {}
    for seed in plan.seeds:
      metrics = _metrics(records, row.part, row.cell, seed)
      best = (metrics.get('best') or {}).get('test_error')
      final = (metrics.get('final') or {}).get('test_error')
      at_subset = _value(records, row.part, row.cell, seed, "test error at the subset's step")
      if best is not None and final is not None:
        last[seed] = final - best
      if best is not None and at_subset is not None:
        subset[seed] = at_subset - best
    rows.append(SelectionRow(row.part, row.cell, last, subset))
  return rows


def imbalance_ratio(plan: plan_lib.Plan) -> float:
  """The imbalanced part's ratio, from its cells' bindings on the page."""
  ratios = {float(b.split('=', 1)[1]) for row in plan.cells if row.part == 'imbalanced'
            for b in row.bindings if b.split('=', 1)[0].strip() == RATIO_BINDING}
  if len(ratios) != 1:
    raise ValueError(f'the imbalanced cells bind {RATIO_BINDING} to {sorted(ratios)}')
  return ratios.pop()


def class_errors(records: str, part: str, cell: str, seed: int) -> Optional[Dict[str, float]]:
  """{class name: test error %} at the best validation step; None without the record."""
  return (_metrics(records, part, cell, seed).get('best') or {}).get('test_class_errors')


def class_gains(records: str, part: str, seed: int) -> Optional[Dict[str, float]]:
  """{class name: supervised − K+1 test error} of a part's split; None while a run is
  missing, or where the two runs do not give an error for the same classes."""
  supervised = class_errors(records, part, SUPERVISED, seed)
  ssl = class_errors(records, part, K_PLUS_1, seed)
  if not supervised or not ssl or set(supervised) != set(ssl) or any(
      v is None for v in (*supervised.values(), *ssl.values())):
    return None
  return {name: supervised[name] - ssl[name] for name in ssl}


@dataclasses.dataclass(frozen=True)
class ClassRow:
  """One class: its labels under imbalance, and per part ('balanced', 'imbalanced') the
  supervised and K+1 test errors and the gain, each the mean over the splits read."""
  name: str
  labels: int
  errors: Dict[str, Tuple[float, float, float]]
  splits: int


def _class_names(records: str, plan: plan_lib.Plan) -> Optional[List[str]]:
  for part in ('balanced', 'imbalanced'):
    for seed in plan.seeds:
      names = _metrics(records, part, K_PLUS_1, seed).get('class_names')
      if names:
        return list(names)
  return None


def _complete_seeds(records: str, plan: plan_lib.Plan) -> List[int]:
  """The splits with both parts' class gains."""
  return [s for s in plan.seeds if class_gains(records, 'balanced', s) is not None
          and class_gains(records, 'imbalanced', s) is not None]


def class_rows(plan: plan_lib.Plan, records: str) -> List[ClassRow]:
  """Per class, over the splits with all four runs."""
  names = _class_names(records, plan)
  seeds = _complete_seeds(records, plan)
  if not names or not seeds:
    return []
  counts = splits_lib.geometric_counts(LABELS, len(names), imbalance_ratio(plan))
  rows = []
  for name, labels in zip(names, counts):
    errors = {}
    for part in ('balanced', 'imbalanced'):
      supervised = np.mean([class_errors(records, part, SUPERVISED, s)[name] for s in seeds])
      ssl = np.mean([class_errors(records, part, K_PLUS_1, s)[name] for s in seeds])
      errors[part] = (float(supervised), float(ssl), float(supervised - ssl))
    rows.append(ClassRow(name, int(labels), errors, len(seeds)))
  return rows


def extreme_classes(names: Sequence[str], counts: Sequence[int]
                    ) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
  """(the EXTREME_CLASSES rarest, the most common) by label count; a tie: the lower label
  counts as more common."""
  order = sorted(range(len(names)), key=lambda c: (-counts[c], c))
  common = tuple(names[c] for c in order[:EXTREME_CLASSES])
  rare = tuple(names[c] for c in order[-EXTREME_CLASSES:])
  return rare, common


def rare_minus_common(plan: plan_lib.Plan, records: str
                      ) -> Dict[int, Tuple[float, float, float]]:
  """{split: (the imbalanced part's gain on the rare classes minus that on the common ones,
  the balanced part's, their difference)}, each class group's gain its mean over classes."""
  names = _class_names(records, plan)
  if not names:
    return {}
  counts = splits_lib.geometric_counts(LABELS, len(names), imbalance_ratio(plan))
  rare, common = extreme_classes(names, counts)
  found = {}
  for seed in _complete_seeds(records, plan):
    differences = []
    for part in ('imbalanced', 'balanced'):
      gain = class_gains(records, part, seed)
      differences.append(float(np.mean([gain[c] for c in rare]) -
                               np.mean([gain[c] for c in common])))
    found[seed] = (differences[0], differences[1], differences[0] - differences[1])
  return found


@dataclasses.dataclass(frozen=True)
class ScoreRow:
  """One score of one kind of run, over the splits that measured it: AUROCs, and the
  known and foreign test images its export's threshold rejects (%)."""
  run: str
  score: str
  default: bool
  aurocs: Tuple[float, ...]
  rejected_known: Tuple[float, ...]
  rejected_foreign: Tuple[float, ...]


SCORE_KEYS = ('auroc', 'rejected_known_pct', 'rejected_foreign_pct')


def score_rows(plan: plan_lib.Plan, records: str) -> List[ScoreRow]:
  """Per kind of run and score (in the order the records name them), over the splits whose
  record measured all of SCORE_KEYS for it."""
  rows = []
  for run, part, cell in SCORED:
    measured = [_metrics(records, part, cell, s).get('foreign_test') for s in plan.seeds]
    measured = [m for m in measured if m and isinstance(m.get('scores'), dict)]
    names = list(dict.fromkeys(name for m in measured for name in m['scores']))
    for score in names:
      found = [m['scores'][score] for m in measured
               if all(isinstance((m['scores'].get(score) or {}).get(k), (int, float))
                      for k in SCORE_KEYS)]
      if found:
        defaults = {m.get('default') for m in measured}
        rows.append(ScoreRow(run, score, score in defaults,
                             *(tuple(f[k] for f in found) for k in SCORE_KEYS)))
  return rows


def _mean_range(values: Sequence[float], places: int) -> str:
  return (f'{np.mean(values):.{places}f} [{min(values):.{places}f}, '
          f'{max(values):.{places}f}]')


def _per_split(values: Dict[int, Optional[float]], seeds: Sequence[int], places: int = 1) -> str:
  return ' / '.join('–' if values.get(s) is None else f'{values[s]:+.{places}f}'
                    for s in seeds)


def readings_part(plan: plan_lib.Plan, records: str) -> str:
  """The page's readings part: the four tables and the rare-minus-common line."""
  if not plan_lib.recorded(records, plan):
    return 'No record yet.'
  lines = ['Secondary readings, exploratory: listed before the runs, but with no test and no '
           'verdict word. An interval is the Hodges–Lehmann estimate with its exact '
           'signed-rank interval over the splits read, as a description.', '',
           '**The gain per condition** (supervised − K+1, points of test error; the figure '
           'shows every split):', '',
           '| condition | reading | n | estimate [interval] | per split (30–37) |',
           '|---|---|---:|---|---|']
  for condition, per_split in gains(plan, records):
    values = _present(per_split.values())
    lines.append(f'| {condition.name} | {condition.reading} | {len(values)} | '
                 f'{_summary(values)} | {_per_split(per_split, plan.seeds)} |')
  lines += ['', '**Model selection** (points of test error against the step the 5,000 '
            'validation images choose; a supervised run\'s last step is where its early '
            'stopping, decided on those same 5,000 images, ended it):', '',
            '| part | cell | n | last step − chosen step | n | 10 per class − 5,000 |',
            '|---|---|---:|---|---:|---|']
  for row in selection_rows(plan, records):
    if row.last or row.subset:
      lines.append(f'| {row.part} | {row.cell} | {len(row.last)} | '
                   f'{_summary(list(row.last.values()))} | {len(row.subset)} | '
                   f'{_summary(list(row.subset.values()))} |')
  classes = class_rows(plan, records)
  if classes:
    lines += ['', f'**Per class** (test error %, mean over the {classes[0].splits} split(s) '
              'with all four balanced and imbalanced runs; gain = supervised − K+1):', '',
              '| class | labels (imbalanced) | balanced: supervised | K+1 | gain | '
              'imbalanced: supervised | K+1 | gain |', '|---|---:|---:|---:|---:|---:|---:|---:|']
    for row in classes:
      cells = ' | '.join(f'{v:.1f}' if i % 3 != 2 else f'{v:+.1f}'
                         for i, v in enumerate(row.errors['balanced'] + row.errors['imbalanced']))
      lines.append(f'| {row.name} | {row.labels} | {cells} |')
    names = [row.name for row in classes]
    rare, common = extreme_classes(names, [row.labels for row in classes])
    found = rare_minus_common(plan, records)
    per_part = {i: {s: v[i] for s, v in found.items()} for i in range(3)}
    lines += ['', f'Rare ({", ".join(rare)}) minus common ({", ".join(common)}) gain, per '
              'split: imbalanced part ' + _summary(list(per_part[0].values())) +
              '; balanced part ' + _summary(list(per_part[1].values())) +
              '; their difference ' + _summary(list(per_part[2].values())) +
              f' ({_per_split(per_part[2], plan.seeds)}). Above 0: under imbalance the rare '
              "classes' gain exceeds the common ones' by more than with balanced labels. The "
              'rare classes also have about a tenth of the common ones\' unlabeled images, so '
              'fewest labels and fewest unlabeled images are not told apart.']
  scores = score_rows(plan, records)
  if scores:
    lines += ['', '**Foreign-image scores** (the 4,000 test images of the four other classes '
              'against the 6,000 known; mean [least, largest] over the splits; the threshold '
              'is the export\'s, passing 95% of the validation images):', '',
              '| run | score | n | AUROC | known rejected % | foreign rejected % |',
              '|---|---|---:|---|---|---|']
    for row in scores:
      name = f'{row.score} (default)' if row.default else row.score
      lines.append(f'| {row.run} | {name} | {len(row.aurocs)} | '
                   f'{_mean_range(row.aurocs, 3)} | {_mean_range(row.rejected_known, 1)} | '
                   f'{_mean_range(row.rejected_foreign, 1)} |')
  return '\n'.join(lines)


def _estimate(values: Sequence[float], places: int = 1) -> str:
  """The Hodges-Lehmann estimate of the values, signed; 'not yet measured' for none."""
  if not values:
    return 'not yet measured'
  return f'{paired_test.hodges_lehmann(list(values)).estimate:+.{places}f}'


def readme_part(plan: plan_lib.Plan, records: str) -> str:
  """README's numbers for a user's own images ("Your own images"): the gain per condition,
  what choosing the step with few validation images costs, and what the default score's
  threshold rejects; Hodges-Lehmann estimates and means over the splits recorded."""
  runs = plan_lib.recorded(records, plan)
  if not runs:
    return 'The user-data study has no record yet.'
  tested = all(r.word is not None for r in verdicts.judge(plan, records))
  splits = len({seed for _, _, seed in runs})
  found = [(c, _present(g.values())) for c, g in gains(plan, records)]
  lines = [f'Measured by [the user-data study](studies/user_data/README.md) on Fashion-MNIST '
           "with the quickstart's settings, " +
           (f'over its {len(plan.seeds)} label splits (its verdicts: [above]'
            '(#does-the-gain-survive-data-as-users-have-it))' if tested else
            f'so far ({len(runs)} of its {len(plan_lib.runs(plan))} runs recorded, on '
            f'{splits} of its {len(plan.seeds)} label splits; no test until all are in)') +
           '. Exploratory readings: point estimates, without the intervals the study\'s page '
           'gives them:', '',
           '- The semi-supervised gain (supervised − K+1, points of test error, Hodges–Lehmann '
           'estimate over the splits): ' +
           ', '.join(f'{_estimate(v)} with {c.name} (n={len(v)})' for c, v in found) + '.']
  selection = {(r.part, r.cell): r for r in selection_rows(plan, records)}
  balanced = selection.get(('balanced', K_PLUS_1))
  if balanced and balanced.subset:
    lines.append(f'- Choosing the step with 10 validation images per class rather than 5,000 '
                 f'changed the test error by {_estimate(list(balanced.subset.values()))} '
                 f'points (K+1, balanced labels, n={len(balanced.subset)}); keeping the last '
                 f'step instead, by {_estimate(list(balanced.last.values()))} points.')
  defaults = [row for row in score_rows(plan, records) if row.default]
  if defaults:
    lines.append("- The export's threshold for its default score rejects, of the known test "
                 'images and of those of the classes nobody labeled (mean over the splits): ' +
                 '; '.join(f'{np.mean(r.rejected_known):.1f}% and '
                           f'{np.mean(r.rejected_foreign):.1f}% ({r.run}, score {r.score}, '
                           f'AUROC {np.mean(r.aurocs):.3f}, n={len(r.aurocs)})'
                           for r in defaults) + '.')
  return '\n'.join(lines)
