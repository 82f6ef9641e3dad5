"""The page's figure: the SSL gain (supervised − K+1) per condition, every split a dot joined
across the conditions by its own line, so that one split's course can be followed, and the
Hodges-Lehmann estimate of each condition a bar (readings.gains)."""
from typing import Dict, List, Optional, Sequence, Tuple

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np

from studies.fashion_mnist_100 import paired_test

NAME = 'gain_per_condition.png'


def draw(gains: Sequence[Tuple[str, Dict[int, Optional[float]]]], seeds: Sequence[int]):
  """The figure of [(condition name, {split: gain or None})]; its axes' first len(seeds)
  lines are the splits' (x: the condition's position, y: the gain), in the order of seeds."""
  figure, axes = plt.subplots(figsize=(7.5, 4.2))
  colors = plt.get_cmap('tab10')
  positions = np.arange(len(gains))
  for i, seed in enumerate(seeds):
    x = [p for p, (_, per_split) in zip(positions, gains) if per_split.get(seed) is not None]
    y = [per_split[seed] for _, per_split in gains if per_split.get(seed) is not None]
    axes.plot(x, y, '-o', color=colors(i % 10), alpha=0.7, linewidth=0.8, markersize=4,
              label=f'split {seed}' if x else None)
  for position, (_, per_split) in zip(positions, gains):
    values = [v for v in per_split.values() if v is not None]
    if len(values) > 1:
      estimate = paired_test.hodges_lehmann(values).estimate
      axes.hlines(estimate, position - 0.25, position + 0.25, colors='k', linewidth=2)
  axes.axhline(0.0, color='0.5', linewidth=0.8, linestyle='--')
  axes.set_xlim(-0.5, len(gains) - 0.5)
  axes.set_xticks(positions)
  axes.set_xticklabels([name for name, _ in gains], fontsize=8)
  axes.set_ylabel('supervised − K+1 (points of test error)')
  axes.set_title('SSL gain per condition, Fashion-MNIST (black: Hodges–Lehmann estimate)',
                 fontsize=9)
  axes.legend(fontsize=7, ncol=2, loc='best')
  axes.grid(axis='y', alpha=0.3)
  figure.tight_layout()
  return figure


def write(path: str, gains, seeds: Sequence[int]):
  """draws the figure into the PNG file `path`, without the metadata (matplotlib's version)
  that would make two writings of the same records differ."""
  figure = draw(gains, seeds)
  figure.savefig(path, dpi=110, metadata={'Software': None})
  plt.close(figure)
