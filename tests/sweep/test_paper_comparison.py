"""Ranks, Spearman's ρ and paired differences of the paper comparison, against known answers."""
import os

import numpy as np
import pytest

from tests.sweep import fake_results
from tests.sweep.test_bin_sweep import _sweep
from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import paper_comparison
from tf_ipmssl.sweep import results as results_lib


def test_average_ranks_share_ties():
  assert paper_comparison.average_ranks([3.0, 1.0, 2.0]) == [3.0, 1.0, 2.0]
  assert paper_comparison.average_ranks([5.0, 1.0, 5.0, 0.5]) == [3.5, 2.0, 3.5, 1.0]


def test_spearman_known_answers():
  assert paper_comparison.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
  assert paper_comparison.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
  # Without ties ρ = 1 − 6 Σ d² / (n (n² − 1)): ranks (1..5) vs (2, 1, 4, 3, 5), Σ d² = 4.
  x, y = [1.0, 2.0, 3.0, 4.0, 5.0], [20.0, 10.0, 40.0, 30.0, 50.0]
  assert paper_comparison.spearman(x, y) == pytest.approx(1 - 6 * 4 / (5 * 24))
  # With ties: Pearson's r of the average ranks, computed with NumPy.
  x, y = [1.0, 2.0, 2.0, 4.0, 7.0], [3.0, 3.0, 1.0, 9.0, 8.0]
  rx, ry = [1, 2.5, 2.5, 4, 5], [2.5, 2.5, 1, 5, 4]
  assert paper_comparison.spearman(x, y) == pytest.approx(np.corrcoef(rx, ry)[0, 1])
  assert paper_comparison.spearman([1, 1], [1, 2]) is None


def _result(cell_id, errors_by_seed):
  cell = cells_lib.get_cell(cell_id)
  runs = tuple(results_lib.RunResult(seed=s, test_error=e, model_dir='') for s, e in
               sorted(errors_by_seed.items()))
  return results_lib.CellResult(cell, runs)


def test_compare_ranks_and_pairs_by_seed():
  baseline = _result('appendix_c/cifar10_none_4k', {0: 30.0, 1: 32.0, 2: 34.0})
  results = [_result('table1/cifar10_fisher_kplus1', {0: 25.0, 1: 29.0, 2: 30.0}),  # paper 17.82
             _result('table1/cifar10_wgan_gp_plain', {0: 40.0, 2: 44.0}),          # paper 44.64
             _result('table1/cifar10_sobolev_plain', {0: 35.0, 1: 36.0, 2: 37.0}),  # paper 80.45
             _result('table1/cifar10_fisher_plain', {})]                            # no runs
  comparison = paper_comparison.compare(results, baseline)
  rows = {r.result.cell.id: r for r in comparison.rows}
  assert [rows[c].paper_rank for c in ('table1/cifar10_fisher_kplus1',
                                       'table1/cifar10_wgan_gp_plain',
                                       'table1/cifar10_sobolev_plain')] == [1, 2, 3]
  assert [rows[c].our_rank for c in ('table1/cifar10_fisher_kplus1',
                                     'table1/cifar10_wgan_gp_plain',
                                     'table1/cifar10_sobolev_plain')] == [1, 3, 2]
  assert rows['table1/cifar10_fisher_plain'].our_rank is None
  assert rows['table1/cifar10_fisher_kplus1'].paired == (-5.0, -3.0, -4.0)
  mean, std = rows['table1/cifar10_fisher_kplus1'].paired_mean_std
  assert (mean, std) == (pytest.approx(-4.0), pytest.approx(1.0))
  assert rows['table1/cifar10_wgan_gp_plain'].paired == (10.0, 10.0)  # Seeds 0 and 2 only.
  assert comparison.rho == pytest.approx(0.5)  # Ranks (1, 2, 3) vs (1, 3, 2).
  text = paper_comparison.markdown(comparison)
  assert ('| table1/cifar10_fisher_kplus1 | 28.00 ± 2.65 (n=3) | 17.82 | 1 | 1 | '
          '-4.00 ± 1.00 (-5.00, -3.00, -4.00) |') in text
  assert "Spearman's ρ between the paper's column and ours: 0.50 (over 3 cells)." in text


def test_cells_with_extra_seeds_are_ranked_on_the_common_ones():
  # fisher_kplus1 (paper 17.82) is the better cell on seeds 0-2 (20 vs 25) but its extra
  # seeds 3 and 4 (50) lift its mean over all five to 32: the ranks must compare 20 with 25.
  baseline = _result('appendix_c/cifar10_none_4k', {0: 30.0, 1: 30.0, 2: 30.0})
  extra = _result('table1/cifar10_fisher_kplus1', {0: 20.0, 1: 20.0, 2: 20.0, 3: 50.0, 4: 50.0})
  three = _result('table1/cifar10_sobolev_plain', {0: 25.0, 1: 25.0, 2: 25.0})  # paper 80.45
  comparison = paper_comparison.compare([extra, three], baseline)
  assert comparison.ranked_on == (0, 1, 2)
  assert [row.our_rank for row in comparison.rows] == [1, 2]
  assert comparison.rho == pytest.approx(1.0)
  text = paper_comparison.markdown(comparison)
  assert '| table1/cifar10_fisher_kplus1 | 32.00 ± 16.43 (n=5) | 17.82 | 1 | 1 |' in text
  assert ("Our ranks and ρ compare the cells' means over seeds 0, 1, 2, which every ranked "
          'cell has; the mean ± std of table1/cifar10_fisher_kplus1 is over all its seeds.'
          in text)
  assert 'ranked_on_seeds,0 1 2' in paper_comparison.csv_text(comparison)
  # Cells with the same seeds, or none in common, are ranked on their own means.
  same = paper_comparison.compare([three, _result('table1/cifar10_fisher_kplus1',
                                                  {0: 30.0, 1: 30.0, 2: 30.0})], baseline)
  assert same.ranked_on is None and 'Our ranks' not in paper_comparison.markdown(same)
  apart = paper_comparison.compare([_result('table1/cifar10_fisher_kplus1', {3: 50.0}), three],
                                   baseline)
  assert apart.ranked_on is None and [row.our_rank for row in apart.rows] == [2, 1]


def test_bin_sweep_writes_the_comparison(tmp_path):
  root = str(tmp_path / 'sweep')
  for seed, (ssl, sup) in enumerate(((20.0, 30.0), (24.0, 31.0))):
    fake_results.write_run(root, cells_lib.get_cell('table1/cifar10_fisher_kplus1'), seed, ssl)
    fake_results.write_run(root, cells_lib.get_cell('appendix_c/cifar10_none_4k'), seed, sup)
  tables_dir = str(tmp_path / 'tables')
  _sweep('--table=table1', '--dataset=cifar10', '--tables_only', f'--root={root}',
         f'--tables_dir={tables_dir}', '--baseline_cell=appendix_c/cifar10_none_4k',
         '--noplots')
  text = open(os.path.join(tables_dir, 'comparison.md')).read()
  assert '| table1/cifar10_fisher_kplus1 | 22.00 ± 2.83 (n=2) | 17.82 | 1 | 1 | ' in text
  assert '-8.50 ± 2.12 (-10.00, -7.00)' in text
  assert 'appendix_c/cifar10_none_4k (baseline) | 30.50 ± 0.71 (n=2) | 39.78' in text
  assert 'comparison.csv' in os.listdir(tables_dir)
  pytest.importorskip('matplotlib')
  _sweep('--table=table1', '--dataset=cifar10', '--tables_only', f'--root={root}',
         f'--tables_dir={tables_dir}', '--baseline_cell=appendix_c/cifar10_none_4k')
  with open(os.path.join(tables_dir, 'comparison.png'), 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_a_paired_difference_across_cpus_is_marked():
  def result(cell_id, cpus):
    return results_lib.CellResult(cells_lib.get_cell(cell_id), tuple(
        results_lib.RunResult(seed=s, test_error=30.0 + s, model_dir='', cpu=c)
        for s, c in enumerate(cpus)))
  baseline = result('appendix_c/cifar10_none_4k', ('A', 'A'))
  comparison = paper_comparison.compare([result('table1/cifar10_fisher_kplus1', ('A', 'B'))],
                                        baseline)
  assert comparison.rows[0].paired_across_cpus == (False, True)
  text = paper_comparison.markdown(comparison)
  assert '+0.00 ± 0.00 (+0.00, +0.00†) |' in text
  assert '† the run and the baseline\'s of that seed trained on different CPUs' in text
  same = paper_comparison.markdown(paper_comparison.compare(
      [result('table1/cifar10_fisher_kplus1', ('A', 'A'))], baseline))
  assert '†' not in same
