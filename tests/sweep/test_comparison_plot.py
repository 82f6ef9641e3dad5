"""comparison.png's labels: every point labelled, no two labels overlapping, in a crowd."""
import itertools

import pytest

from tf_ipmssl import cells as cells_lib
from tf_ipmssl.sweep import paper_comparison
from tf_ipmssl.sweep import plots
from tf_ipmssl.sweep import results as results_lib

# Four Fisher-family cells whose paper numbers lie within 2.7 points of each other, and ours
# within 0.6: at their first place (right of the point) their labels overlap.
CROWD = {'table1/cifar10_fisher_sobolev_kplus1': 25.0, 'table1/cifar10_fisher_kplus1': 25.2,
         'table1/cifar10_fisher_kplus1_entropy': 25.4, 'table1/cifar10_fisher_plain': 25.6,
         'table1/cifar10_sobolev_plain': 60.0}


def _result(cell_id, errors):
  runs = tuple(results_lib.RunResult(seed=s, test_error=e, model_dir='')
               for s, e in enumerate(errors))
  return results_lib.CellResult(cells_lib.get_cell(cell_id), runs)


def _boxes(figure, annotations):
  """The labels' text boxes (an annotation's own box also holds its line to the point)."""
  from matplotlib import text  # pylint: disable=g-import-not-at-top
  figure.canvas.draw()
  renderer = figure.canvas.get_renderer()
  return [text.Text.get_window_extent(a, renderer) for a in annotations]


def test_crowded_labels_do_not_overlap():
  pytest.importorskip('matplotlib')
  plt = plots._pyplot()  # pylint: disable=protected-access
  comparison = paper_comparison.compare(
      [_result(c, (e, e + 0.1)) for c, e in CROWD.items()],
      _result('appendix_c/cifar10_none_4k', (30.0, 31.0)))
  figure = plots._comparison_figure(plt, comparison)  # pylint: disable=protected-access
  try:
    annotations = [t for t in figure.axes[0].texts if hasattr(t, 'xy')]
    assert sorted(a.get_text() for a in annotations) == sorted(
        c.split('/', 1)[1].split('_', 1)[1] for c in CROWD)
    for annotation in annotations:  # Each label names its own point.
      cell = next(c for c in CROWD if c.endswith('_' + annotation.get_text()))
      assert annotation.xy == pytest.approx(
          (cells_lib.get_cell(cell).paper_error, CROWD[cell] + 0.05))
    boxes = _boxes(figure, annotations)
    assert not [(a.get_text(), b.get_text()) for (a, box_a), (b, box_b)
                in itertools.combinations(zip(annotations, boxes), 2) if box_a.overlaps(box_b)]
    # The premise: all at the first place, the crowd's labels would overlap.
    for annotation in annotations:
      annotation.set_position(plots._LABEL_OFFSETS[0])  # pylint: disable=protected-access
      annotation.set_horizontalalignment('left')
    assert any(a.overlaps(b) for a, b in itertools.combinations(_boxes(figure, annotations), 2))
  finally:
    plt.close(figure)
