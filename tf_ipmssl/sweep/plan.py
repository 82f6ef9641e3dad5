"""A sweep's plan: every (cell, seed) pair as one run with its model dir and command.

A run of cell `table1/cifar10_fisher_kplus1` with seed 3 lives in
`<root>/table1/cifar10_fisher_kplus1/seed_3` and is trained by

  bin/train --model_dir=<that dir> --gin_file=gin/table1/cifar10_fisher_kplus1.gin
      [--gin_file=<extra>...] [--gin_bindings=<extra>...]
      --gin_bindings='train.seed = 3' --gin_bindings='build_ssl_data.split_seed = 3'

The seed varies both the initialization / noise / data order (`train.seed`) and the labeled
subset (`build_ssl_data.split_seed`), as the paper's 5 runs per cell did. The seed bindings
come last so that no extra file or binding can silently pin them.
"""
import dataclasses
import os
import pathlib
import shlex
import sys
from typing import List, Sequence, Tuple

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors

# Relative: commands run from the repository root (see runner.run_one).
TRAIN_PROGRAM = (sys.executable, 'bin/train')
SEED_DIR_PREFIX = 'seed_'


@dataclasses.dataclass(frozen=True)
class Run:
  """One training run of a sweep.

  Attributes:
    cell: the paper cell it reproduces.
    seed: its seed (init and label split).
    model_dir: its own run directory (absolute).
    gin_files: the cell's gin file, then the sweep's extra files (as given to bin/train).
    gin_bindings: the sweep's extra bindings, then the seed bindings.
  """
  cell: cells_lib.Cell
  seed: int
  model_dir: str
  gin_files: Tuple[str, ...]
  gin_bindings: Tuple[str, ...]

  @property
  def name(self) -> str:
    return f'{self.cell.id} seed {self.seed}'

  def arguments(self) -> List[str]:
    """bin/train's flags for this run."""
    return ([f'--model_dir={self.model_dir}'] + [f'--gin_file={f}' for f in self.gin_files]
            + [f'--gin_bindings={b}' for b in self.gin_bindings])

  def command(self, program: Sequence[str] = TRAIN_PROGRAM) -> List[str]:
    return list(program) + self.arguments()

  def command_line(self, program: Sequence[str] = TRAIN_PROGRAM) -> str:
    """The command as one shell line (run from the repository root)."""
    return shlex.join(self.command(program))


def parse_seeds(text: str) -> Tuple[int, ...]:
  """'3' → seeds (0, 1, 2); '0,1,4' → (0, 1, 4); '7,' → (7,); '2-4' → (2, 3, 4)."""
  text = text.strip()
  try:
    if ',' in text:
      seeds = tuple(int(s) for s in text.split(',') if s.strip())
    elif '-' in text.lstrip('-'):
      first, last = text.split('-', 1)
      seeds = tuple(range(int(first), int(last) + 1))
    else:
      seeds = tuple(range(int(text)))
  except ValueError:
    raise errors.ConfigError(
        f"--seeds='{text}' is neither a count ('5'), a list ('0,1,2') nor a range "
        "('0-4')") from None
  if not seeds and text.isdigit():
    raise errors.ConfigError(f"--seeds='{text}' is a count of zero seeds (a lone number is a "
                             f"count: '3' = 0, 1, 2); for seed {int(text)} alone write "
                             f"--seeds='{int(text)},'")
  if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
    raise errors.ConfigError(f"--seeds='{text}' must name distinct non-negative seeds")
  return seeds


def seed_bindings(seed: int) -> Tuple[str, ...]:
  return (f'train.seed = {seed}', f'build_ssl_data.split_seed = {seed}')


def run_dir(root: str, cell: cells_lib.Cell, seed: int) -> str:
  return os.path.join(os.path.abspath(root), *cell.id.split('/'), f'{SEED_DIR_PREFIX}{seed}')


def _gin_file_argument(path: str) -> str:
  """Repository files as 'gin/...' (commands run from the repo root), others absolute."""
  if not pathlib.Path(path).resolve().is_file():
    raise errors.ConfigError(f'gin file {path} does not exist')
  return cells_lib.repository_path(path)


def make_plan(cells: Sequence[cells_lib.Cell], seeds: Sequence[int], root: str,
              extra_gin_files: Sequence[str] = (),
              extra_gin_bindings: Sequence[str] = ()) -> Tuple[Run, ...]:
  """Every cell × seed as a Run, cell-major, in the paper's order."""
  extra_files = tuple(_gin_file_argument(f) for f in extra_gin_files)
  return tuple(
      Run(cell=cell, seed=seed, model_dir=run_dir(root, cell, seed),
          gin_files=(cell.gin_file,) + extra_files,
          gin_bindings=tuple(extra_gin_bindings) + seed_bindings(seed))
      for cell in cells for seed in seeds)
