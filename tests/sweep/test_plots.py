"""What a table's figure draws (sweep/plots.py), read back from its matplotlib artists and
checked against NumPy: each cell's mean and sample std (ddof = 1) over its seeds, the
paper's number beside it, and for a table of your own every seed's error as a dot."""
import numpy as np
import pytest

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import results as results_lib

matplotlib = pytest.importorskip('matplotlib')
from tf_ipmssl.sweep import plots  # pylint: disable=g-import-not-at-top,wrong-import-position

ERRORS = {  # Appendix A, Fisher + Sobolev, no norm: label count -> the seeds' errors.
    '1k': (21.0, 23.5, 22.0),
    '4k': (16.0, 17.0),
}


def _written(root, errors_by_cell):
  for cell_id, errors in errors_by_cell.items():
    for seed, error in enumerate(errors):
      fake_results.write_run(root, cells_lib.get_cell(cell_id), seed, error)
  return results_lib.collect(root, [cells_lib.get_cell(c) for c in errors_by_cell])


def test_the_error_against_labels_plot_draws_mean_and_sample_std(tmp_path):
  cells = {f'appendix_a/cifar10_fisher_sobolev_none_{k}': v for k, v in ERRORS.items()}
  results = _written(str(tmp_path), cells)
  table = cells_lib.TABLES['appendix_a']
  plt = plots._pyplot()  # pylint: disable=protected-access
  figure = plots._plot_vs_labels(plt, table, results)  # pylint: disable=protected-access
  try:
    (axes,) = figure.axes
    (ours,) = [c for c in axes.containers if c.get_label().endswith('(ours)')]
    line, _, (bars,) = ours
    x, means = (np.asarray(d, float) for d in line.get_data())
    np.testing.assert_array_equal(x, [1000, 4000])
    expected = [np.mean(v) for v in ERRORS.values()]
    stds = [np.std(v, ddof=1) for v in ERRORS.values()]
    np.testing.assert_allclose(means, expected, rtol=1e-12)
    segments = np.array(bars.get_segments())  # [[x, mean - std], [x, mean + std]] per point.
    np.testing.assert_allclose(segments[:, 0, 1], np.subtract(expected, stds), rtol=1e-12)
    np.testing.assert_allclose(segments[:, 1, 1], np.add(expected, stds), rtol=1e-12)
    # The paper's line: its four numbers for this row, at 1000 to 8000 labels.
    label = 'Fisher + Sobolev, no norm (n_c = 1) (paper)'
    (paper,) = [l for l in axes.lines if l.get_label() == label]
    paper_x, paper_y = (np.asarray(d, float) for d in paper.get_data())
    np.testing.assert_array_equal(paper_x, [1000, 2000, 4000, 8000])
    np.testing.assert_array_equal(paper_y, [20.14, 17.38, 15.77, 14.20])
  finally:
    plt.close(figure)


def test_the_bar_plot_of_a_table_of_your_own_draws_mean_std_and_every_seed(tmp_path):
  table = cells_lib.Table(
      name='own_table_plots', title='t', rows=(('a', 'row a'), ('b', 'row b'), ('c', 'row c')),
      columns=(('fashion_mnist', '', 'Fashion-MNIST'),), row_header='r', has_paper=False)
  cells_lib.register_table(table)
  errors = {'own_table_plots/fashion_mnist_a': (30.0, 27.0, 24.5),
            'own_table_plots/fashion_mnist_c': (40.0,)}
  results = _written(str(tmp_path), errors)
  plt = plots._pyplot()  # pylint: disable=protected-access
  figure = plots._plot_bars(plt, table, results)  # pylint: disable=protected-access
  try:
    axes = figure.axes[0]
    (bars,) = [c for c in axes.containers if c.get_label() == 'ours (mean ± std)']
    widths = [patch.get_width() for patch in bars.patches]
    a = errors['own_table_plots/fashion_mnist_a']
    np.testing.assert_allclose(widths, [np.mean(a), 0.0, 40.0], rtol=1e-12)
    segments = np.array(bars.errorbar.lines[2][0].get_segments())
    np.testing.assert_allclose(segments[0, :, 0], [np.mean(a) - np.std(a, ddof=1),
                                                   np.mean(a) + np.std(a, ddof=1)], rtol=1e-12)
    np.testing.assert_allclose(segments[2, :, 0], [40.0, 40.0])  # One seed: no spread.
    (dots,) = [l for l in axes.lines if l.get_label() == 'one seed']
    assert sorted(zip(dots.get_xdata(), dots.get_ydata())) == sorted(
        [(e, 0) for e in a] + [(40.0, 2)])
  finally:
    plt.close(figure)
