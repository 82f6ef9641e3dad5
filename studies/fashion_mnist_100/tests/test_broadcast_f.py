"""The broadcast-f part of conclusions.md: each broadcast cell beside its per-example runs on
the seeds both have, its numbers recomputed here."""
import statistics

from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import broadcast_f
from tf_ipmssl.sweep import results as results_lib

GP_F, SOBOLEV_F = 'table2/cifar10_gp_f', 'table2/cifar10_sobolev_f'


def _cell(cell_id, *runs):
  return results_lib.CellResult(cells_lib.get_cell(cell_id), tuple(runs))


def _run(seed, error, tag, cpu='A', labeled=None):
  return results_lib.RunResult(seed=seed, test_error=error, model_dir=f'{tag}{seed}', cpu=cpu,
                               last_labeled_error=labeled)


def _rows(text):
  return text.splitlines()[2:]


def test_one_row_per_broadcast_cell_on_the_shared_seeds():
  per_example = {
      GP_F: _cell(GP_F, _run(0, 30.0, 'p', labeled=20.0), _run(1, 40.0, 'p', labeled=10.0),
                  _run(2, 35.0, 'p', cpu='B', labeled=0.0), _run(3, 99.0, 'p')),
      SOBOLEV_F: _cell(SOBOLEV_F, _run(0, 30.0, 'p')),
  }
  broadcast = {GP_F: _cell(GP_F, _run(0, 90.0, 'b', labeled=90.0),
                           _run(1, 80.0, 'b', labeled=70.0), _run(2, 85.0, 'b', labeled=80.0))}
  late = {'p0': None, 'p1': 41.0, 'p2': 36.0, 'b0': 88.0, 'b1': 82.0, 'b2': 86.0}
  text = broadcast_f.table(per_example, broadcast, late=lambda run: late[run.model_dir])
  rows = _rows(text)
  assert len(rows) == 1  # Ω_S(f) has no broadcast runs; seed 3 has no broadcast partner.
  cells = [c.strip() for c in rows[0].strip('|').split('|')]
  assert cells[:3] == ['Ω_GP(f)', '49.28', '0–2']
  assert cells[3] == f'{statistics.mean([30, 40, 35]):.2f} ± {statistics.stdev([30, 40, 35]):.2f}'
  assert cells[4] == f'{statistics.mean([90, 80, 85]):.2f} ± {statistics.stdev([90, 80, 85]):.2f}'
  assert cells[5] == '+60.0 / +40.0 / +50.0†'  # Seed 2's runs trained on different CPUs.
  assert cells[6] == f'{(41 + 36) / 2:.2f} (n=2)' and cells[7] == f'{(88 + 82 + 86) / 3:.2f}'
  assert cells[8:] == ['20 / 10 / 0', '90 / 70 / 80']


def test_no_broadcast_runs_no_table():
  per_example = {GP_F: _cell(GP_F, _run(0, 30.0, 'p'))}
  assert broadcast_f.table(per_example, {}, late=lambda run: None) == ''
  # No seed in common: nothing to set side by side.
  broadcast = {GP_F: _cell(GP_F, _run(5, 90.0, 'b'))}
  assert broadcast_f.table(per_example, broadcast, late=lambda run: None) == ''


def test_runs_without_curves_or_labeled_errors_read_as_dashes():
  per_example = {GP_F: _cell(GP_F, _run(0, 30.0, 'p'))}
  broadcast = {GP_F: _cell(GP_F, _run(0, 90.0, 'b'))}
  cells = [c.strip() for c in _rows(broadcast_f.table(
      per_example, broadcast, late=lambda run: None))[0].strip('|').split('|')]
  assert cells[2:] == ['0', '30.00', '90.00', '+60.0', '–', '–', '–', '–']
