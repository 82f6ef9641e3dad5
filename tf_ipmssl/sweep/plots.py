"""PNG figures of sweep results beside the paper's numbers (matplotlib, optional extra).

- Tables whose columns are numbers (an x_label: Appendix A's numbers of labels, or a table
  of your own's): test error against them, one line per row, ours (mean ± std) solid and
  the paper's dashed.
- Every other table: one horizontal bar chart per paper column, its rows as bar pairs:
  ours (mean, std as error bar) and the paper's (ours alone for a table of your own, each
  seed a dot).
- The comparison (paper_comparison): ours against the paper's error, one labelled point per
  cell; the labels are placed where they overlap no other label or point.

matplotlib is imported only here and only when a plot is made; without it, `plot_table`
raises a UserError that says how to install it (`pip install -e '.[plots]'`).
"""
import os
from typing import Dict, List

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from tf_ipmssl.sweep import results as results_lib
from tf_ipmssl.sweep import tables as tables_lib


def _pyplot():
  try:
    import matplotlib  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise errors.UserError(
        "plots need matplotlib, which is not installed: `pip install -e '.[plots]'` (or "
        '`pip install matplotlib`), or skip them with --noplots') from None
  matplotlib.use('Agg')  # Files only, no display.
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


def _title(table: cells_lib.Table, results) -> str:
  title = table.title
  foreign = tables_lib.foreign_datasets(table, results)
  if foreign:
    title += f"\n(ours on {', '.join(foreign)}; paper on its own dataset: not comparable)"
  return title


def _plot_vs_labels(plt, table, results):
  figure, axes = plt.subplots(figsize=(7, 4.5))
  colors = plt.rcParams['axes.prop_cycle'].by_key()['color']
  for index, (row, label) in enumerate(table.rows):
    color = colors[index % len(colors)]
    ours, paper = [], []
    for dataset, column, header in table.columns:
      cell = cells_lib.cell_at(table.name, dataset, row, column)
      if cell is None:
        continue
      labels = int(header)
      if cell.paper_error is not None:
        paper.append((labels, cell.paper_error))
      result = results.get(cell.id)
      if result is not None and result.n:
        ours.append((labels, result.mean, result.std or 0.0))
    if paper:
      axes.plot(*zip(*paper), linestyle='--', marker='o', color=color, alpha=0.6,
                label=f'{label} (paper)')
    if ours:
      xs, means, stds = zip(*ours)
      axes.errorbar(xs, means, yerr=stds, marker='s', color=color, capsize=3,
                    label=f'{label} (ours)')
  axes.set_xscale('log')
  axes.minorticks_off()
  xticks = [int(header) for _, _, header in table.columns]
  axes.set_xticks(xticks)
  axes.set_xticklabels([str(x) for x in xticks])
  axes.set_xlabel(table.x_label)
  axes.set_ylabel('test error (%)')
  axes.grid(alpha=0.3)
  axes.legend(fontsize=7)
  axes.set_title(_title(table, results), fontsize=9)
  return figure


def _plot_bars(plt, table, results):
  columns = table.columns
  ncols = min(len(columns), 3)
  nrows = -(-len(columns) // ncols)
  height = 0.45 * len(table.rows) + 1.2
  figure, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, height * nrows),
                              squeeze=False, sharey=True)
  labels = [label for _, label in table.rows]
  positions = list(range(len(table.rows)))
  for index, (dataset, column, header) in enumerate(columns):
    ax = axes[index // ncols][index % ncols]
    ours, ours_err, paper, dots = [], [], [], []
    for position, (row, _) in zip(positions, table.rows):
      cell = cells_lib.cell_at(table.name, dataset, row, column)
      result = results.get(cell.id) if cell else None
      has_ours = result is not None and result.n > 0
      ours.append(result.mean if has_ours else 0.0)
      ours_err.append((result.std or 0.0) if has_ours else 0.0)
      paper.append(cell.paper_error if cell and cell.paper_error is not None else 0.0)
      dots += [(error, position) for error in (result.errors if has_ours else ())]
    if table.has_paper:
      ax.barh([p - 0.2 for p in positions], ours, height=0.4, xerr=ours_err, capsize=2,
              label='ours')
      ax.barh([p + 0.2 for p in positions], paper, height=0.4, alpha=0.6, label='paper')
    else:
      ax.barh(positions, ours, height=0.6, xerr=ours_err, capsize=2, label='ours (mean ± std)')
      if dots:
        ax.plot(*zip(*dots), 'k.', markersize=4, label='one seed')
    ax.set_yticks(positions)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_title(header, fontsize=8)
    ax.set_xlabel('test error (%)', fontsize=8)
    ax.grid(axis='x', alpha=0.3)
  for index in range(len(columns), nrows * ncols):
    axes[index // ncols][index % ncols].axis('off')
  axes[0][0].invert_yaxis()  # The paper's first row on top (the y axis is shared).
  axes[0][0].legend(fontsize=7)
  figure.suptitle(_title(table, results), fontsize=9)
  return figure


def plot_table(table: cells_lib.Table, results: Dict[str, 'results_lib.CellResult'],
               path: str) -> str:
  """Writes the table's figure to `path` (PNG); returns path."""
  plt = _pyplot()
  plot = _plot_vs_labels if table.x_label else _plot_bars
  figure = plot(plt, table, results)
  figure.tight_layout()
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  figure.savefig(path, dpi=110)
  plt.close(figure)
  return path


def plot_tables(results: Dict[str, 'results_lib.CellResult'], tables_dir: str) -> List[str]:
  """<table>.png for each table with results; returns the paths written."""
  return [plot_table(table, results, os.path.join(tables_dir, f'{table.name}.png'))
          for table in tables_lib.tables_with_results(results)]


# Where a point's label may go, in points from the point, tried in this order: right, then
# left of it, a row lower, a row higher, and so on; the first place free is taken.
_LABEL_OFFSETS = tuple((side * 6, dy) for dy in (2, -10, 12, -20, 22, -30, 32, -40, 42)
                       for side in (1, -1))
_MARKER_RADIUS_POINTS = 3.5


def place_labels(figure, axes, labelled_points, fontsize=7):
  """Annotates each (x, y, text) of `labelled_points` beside its point where the label's box
  overlaps no label placed before it and no point (the first such place of _LABEL_OFFSETS;
  the first place when none is free), joined to its point by a thin line when it sits a row
  or more away. Place the labels after the layout is final. Returns the annotations in the
  order of `labelled_points`."""
  from matplotlib import transforms  # pylint: disable=g-import-not-at-top
  figure.canvas.draw()
  renderer = figure.canvas.get_renderer()
  radius = _MARKER_RADIUS_POINTS * figure.dpi / 72.0
  taken = []
  for x, y, _ in labelled_points:
    px, py = axes.transData.transform((x, y))
    taken.append(transforms.Bbox.from_extents(px - radius, py - radius, px + radius,
                                              py + radius))
  def annotate(x, y, text, dx, dy, line):
    return axes.annotate(
        text, (x, y), textcoords='offset points', xytext=(dx, dy), fontsize=fontsize,
        ha='left' if dx > 0 else 'right', va='bottom',
        arrowprops=dict(arrowstyle='-', color='0.6', linewidth=0.5) if line else None)
  annotations = {}
  # Bottom to top, left to right: a crowded cluster fans out the same way every time.
  order = sorted(range(len(labelled_points)), key=lambda i: labelled_points[i][1::-1])
  for index in order:
    x, y, text = labelled_points[index]
    for dx, dy in _LABEL_OFFSETS + (_LABEL_OFFSETS[0],):
      probe = annotate(x, y, text, dx, dy, line=False)
      box = probe.get_window_extent(renderer)
      probe.remove()
      if not any(box.overlaps(other) for other in taken):
        break
    taken.append(box)
    annotations[index] = annotate(x, y, text, dx, dy, line=abs(dy) > 2)
  return [annotations[i] for i in range(len(labelled_points))]


def _comparison_figure(plt, comparison):
  figure, axes = plt.subplots(figsize=(7.5, 5.5), dpi=120)
  labelled = []
  for row in comparison.rows:
    result = row.result
    if not result.n or result.cell.paper_error is None:
      continue
    axes.errorbar(result.cell.paper_error, result.mean, yerr=result.std or 0.0, fmt='o',
                  color='tab:blue', capsize=3)
    labelled.append((result.cell.paper_error, result.mean,
                     result.cell.id.split('/', 1)[1].split('_', 1)[1]))
  base = comparison.baseline
  if base.n:
    axes.axhline(base.mean, color='tab:red', linestyle='--',
                 label=f'{base.cell.id} (ours, supervised): {base.mean:.2f}%')
    axes.legend(loc='lower right', fontsize=8)
  rho = '–' if comparison.rho is None else f'{comparison.rho:.2f}'
  axes.set_title(f"Ours vs the paper, per cell (Spearman's ρ = {rho})", fontsize=10)
  axes.set_xlabel("paper's test error % (its dataset, full budget)")
  axes.set_ylabel('our test error % (mean ± std over seeds)')
  axes.grid(alpha=0.3)
  figure.tight_layout()
  place_labels(figure, axes, labelled)
  return figure


def plot_comparison(comparison, path: str) -> str:
  """Ours against the paper's error, one point per cell (mean ± std) labelled without
  overlaps, the baseline's mean as a horizontal line and Spearman's ρ in the title
  (paper_comparison.Comparison)."""
  plt = _pyplot()
  figure = _comparison_figure(plt, comparison)
  figure.savefig(path, bbox_inches='tight')
  plt.close(figure)
  return path
