"""The study's plan, read from its page (studies/user_data/README.md): the splits, the cells
each part trains (with their gin files and bindings) and the questions' contrasts.

The page was committed before any run; everything that trains or judges reads it here, so
the runs and the verdicts follow the page and nothing else: `sweeps` gives the bin/sweep
calls of one split, part by part (scripts/run_plan.py makes them), and `questions` the rows
each contrast sums.
"""
import dataclasses
import os
from typing import Dict, List, Optional, Sequence, Tuple

from studies.fashion_mnist_100 import results_page
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors

PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'README.md')
SPLITS_PART, CELLS_PART, QUESTIONS_PART = ('user_data splits', 'user_data cells',
                                           'user_data questions')
RESULTS_PART, READINGS_PART = 'user_data results', 'user_data readings'
# The bindings every run of the study has besides its cell's (the page's "Every run").
COMMON_BINDINGS = ('train.validation_subset_per_class = 10', 'train.test_every_evaluation = True')
PRESET = 'gin/presets/cpu_fashion_mnist_100.gin'
# A run's endpoints (the page's "Endpoints"), and the one that is a constant.
ENDPOINTS = ('test error', 'balanced test error', "test error at the subset's step",
             'auroc critic', 'auroc softmax')
NONE = '–'


@dataclasses.dataclass(frozen=True)
class CellRow:
  part: str
  cell: str
  gin_files: Tuple[str, ...]
  bindings: Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Term:
  """One row of a question: weight × (the endpoint of `cell`'s run in `part`), or weight ×
  a constant (part and cell None)."""
  part: Optional[str]
  cell: Optional[str]
  endpoint: str
  weight: float

  @property
  def constant(self) -> Optional[float]:
    return float(self.endpoint) if self.part is None else None


@dataclasses.dataclass(frozen=True)
class Plan:
  seeds: Tuple[int, ...]
  cells: Tuple[CellRow, ...]
  questions: Dict[str, Tuple[Term, ...]]


def _listed(text: str) -> Tuple[str, ...]:
  return () if text == NONE else tuple(t.strip() for t in text.split(';'))


def read_plan(page_path: str = PAGE) -> Plan:
  """The plan of the page at `page_path`; a ConfigError names what the page gets wrong."""
  with open(page_path) as f:
    text = f.read()
  splits = results_page.part(text, SPLITS_PART, page_path).strip()
  if not splits.startswith('seeds:'):
    raise errors.ConfigError(f'{page_path}: its splits part must read "seeds: FIRST-LAST"')
  first, _, last = splits.split(':', 1)[1].strip().partition('-')
  seeds = tuple(range(int(first), int(last or first) + 1))
  cells = []
  for part, cell, gin_files, bindings in results_page.table_rows(
      results_page.part(text, CELLS_PART, page_path), 4, page_path, 'part'):
    cells_lib.get_cell(cell)  # An unknown cell id is the page's mistake: say so.
    cells.append(CellRow(part, cell, _listed(gin_files), _listed(bindings)))
  trained = {(row.part, row.cell) for row in cells}
  questions: Dict[str, List[Term]] = {}
  for question, part, cell, endpoint, weight in results_page.table_rows(
      results_page.part(text, QUESTIONS_PART, page_path), 5, page_path, 'question'):
    if part == NONE:
      term = Term(None, None, str(float(endpoint)), float(weight))
    elif (part, cell) not in trained or endpoint not in ENDPOINTS:
      raise errors.ConfigError(f'{page_path}: question {question}: {part} {cell} is not a '
                               f'cell of the plan, or {endpoint!r} not one of {ENDPOINTS}')
    else:
      term = Term(part, cell, endpoint, float(weight))
    questions.setdefault(question, []).append(term)
  return Plan(seeds, tuple(cells), {q: tuple(t) for q, t in questions.items()})


def sweeps(plan: Plan, seed: int) -> List[Tuple[str, List[str]]]:
  """(part, bin/sweep flags) of the split `seed`, one per part and set of gin files and
  bindings, in the page's order: the flags after --root, --archive and --train_checkout."""
  groups: Dict[Tuple, List[str]] = {}
  for row in plan.cells:
    groups.setdefault((row.part, row.gin_files, row.bindings), []).append(row.cell)
  calls = []
  for (part, gin_files, bindings), cells in groups.items():
    flags = [f'--cells={",".join(cells)}', f'--seeds={seed},', f'--gin_file={PRESET}']
    flags += [f'--gin_file={name}' for name in gin_files]
    flags += [f'--gin_bindings={b}' for b in (*COMMON_BINDINGS, *bindings)]
    calls.append((part, flags))
  return calls


def runs(plan: Plan) -> List[Tuple[str, str, int]]:
  """Every (part, cell, seed) the plan trains."""
  return [(row.part, row.cell, seed) for seed in plan.seeds for row in plan.cells]


def record_dir(records: str, part: str, cell: str, seed: int) -> str:
  return os.path.join(records, part, cell, f'seed_{seed}')


def recorded(records: str, plan: Plan) -> Sequence[Tuple[str, str, int]]:
  """The plan's runs whose record holds a metrics.json."""
  return [(p, c, s) for p, c, s in runs(plan)
          if os.path.exists(os.path.join(record_dir(records, p, c, s), 'metrics.json'))]
