"""The augmentation measurement's regenerated part (docs/results/augmentation.md).

The quickstart (table1/cifar10_fisher_kplus1_entropy) and its supervised critic
(appendix_c/cifar10_none_4k) at 100 Fashion-MNIST labels, each without augmentation and with
it (gin/presets/augment.gin; augment_labeled.gin for the supervised critic, which has no
unlabeled stream), on the same seeds: studies/fashion_mnist_100/scripts/augmentation_effect.sh trains them and keeps
each finished run's record under RECORDS/<arm>/<cell id>/seed_<s>, arm 'plain' or
'augmented'. Per cell and arm: the test error at the best validation step (the reported
one), the test error at the last evaluation and the labeled-set error at the best step, as
mean ± sample sd over the seeds; per cell, the seed-by-seed differences augmented − plain of
the reported error (seeds where both arms finished) and their Hodges–Lehmann estimate with
its exact signed-rank interval (paired_test.hodges_lehmann; below 6 seeds the interval is
[min, max], its coverage given). The runs' CPUs are named; a cell whose arms trained on
different CPUs is marked, since kernels of different CPU families round differently.
"""
import os
from typing import Dict, List, Optional, Sequence, Tuple

from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import paired_test
from tf_ipmssl.sweep import results as results_lib

ARMS = ('plain', 'augmented')
CELLS = (('table1/cifar10_fisher_kplus1_entropy', 'quickstart: Fisher, K+1 with f+^H'),
         ('appendix_c/cifar10_none_4k', 'supervised critic (CE only)'))
PART = 'effect'


def collect(records: str) -> Dict[Tuple[str, str], results_lib.CellResult]:
  """{(cell id, arm): its finished runs} under records/<arm>."""
  return {(cell_id, arm): results_lib.collect_cell(os.path.join(records, arm),
                                                   cells_lib.get_cell(cell_id))
          for cell_id, _ in CELLS for arm in ARMS}


def differences(plain: results_lib.CellResult,
                augmented: results_lib.CellResult) -> List[Tuple[int, float]]:
  """[(seed, augmented − plain reported test error)] over the seeds both arms finished."""
  plain_errors = dict(zip(plain.seeds, plain.errors))
  return [(seed, error - plain_errors[seed])
          for seed, error in zip(augmented.seeds, augmented.errors) if seed in plain_errors]


def _mean_text(values: Sequence[Optional[float]]) -> str:
  known = [v for v in values if v is not None]
  if len(known) < len(values) or not known:
    return '–'
  return cells_lib.format_error(*results_lib.mean_std(known))


def _cpus(results: Sequence[results_lib.CellResult]) -> List[str]:
  return sorted({run.cpu or 'not recorded' for result in results for run in result.runs})


def part(results: Dict[Tuple[str, str], results_lib.CellResult]) -> str:
  """The page's regenerated part: the arms' table, the paired differences, the CPUs."""
  lines = ['| cell | arm | seeds | test error, best step (%) | test error, last eval (%) '
           '| labeled-set error, best step (%) |', '|---|---|---|---|---|---|']
  for cell_id, title in CELLS:
    for arm in ARMS:
      result = results[cell_id, arm]
      runs = result.runs
      seeds = ', '.join(str(s) for s in result.seeds) or 'none yet'
      lines.append(f'| {title} | {arm} | {seeds} | {_mean_text([r.test_error for r in runs])} '
                   f'| {_mean_text([r.last_test_error for r in runs])} '
                   f'| {_mean_text([r.labeled_error for r in runs])} |')
  lines += ['', 'Augmented − plain, reported test error (points; negative: augmentation '
            'helps), seed by', 'seed, and the Hodges–Lehmann estimate [interval] (coverage):',
            '']
  for cell_id, title in CELLS:
    plain, augmented = results[cell_id, 'plain'], results[cell_id, 'augmented']
    pairs = differences(plain, augmented)
    if not pairs:
      lines.append(f'- {title}: no seed with both arms finished yet')
      continue
    seeds = ' / '.join(f'{d:+.2f} (seed {s})' for s, d in pairs)
    interval = paired_test.hodges_lehmann([d for _, d in pairs]).text
    cpus = _cpus((plain, augmented))
    mixed = ' (its runs trained on different CPUs)' if len(cpus) > 1 else ''
    lines.append(f'- {title}: {seeds}; HL {interval}{mixed}')
  cpus = _cpus(list(results.values()))
  lines += ['', 'Trained on: ' + ('; '.join(cpus) if cpus else 'no run finished yet') + '.']
  return '\n'.join(lines) + '\n'
