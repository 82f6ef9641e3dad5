"""Wall time per run of the miniature Table 1, summed over the bin/train sessions.

  .venv/bin/python studies/fashion_mnist_100/scripts/table1_wall_times.py ROOT

The sweep's runs were trained before metrics.json summed a run's sessions (`wall_seconds`),
so runs.csv's wall_seconds of a resumed run is its last session's. This script adds up, per
finished run, the span of each session's TensorBoard log (`train/`, one events file per
session: first to last scalar; a session's start-up before its first logged step is not
counted) and prints a markdown table: cell, seed, sessions, spans, total.
"""
import os
import pathlib
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3]))  # The checkout.
from studies.fashion_mnist_100 import results_page  # pylint: disable=g-import-not-at-top
from studies.fashion_mnist_100.paper_claims import BASELINE  # pylint: disable=g-import-not-at-top
from tf_ipmssl import cells as cells_lib  # pylint: disable=g-import-not-at-top
from tf_ipmssl.sweep import results as results_lib  # pylint: disable=g-import-not-at-top


def table(root):
  """The markdown table's lines: per finished run, its sessions' spans and their total."""
  cells = (cells_lib.select_cells(tables=['table1'], datasets=['cifar10'])
           + (cells_lib.get_cell(BASELINE),))
  return results_page.wall_time_table(results_lib.collect(root, cells))


def main(root):
  print('\n'.join(table(root)))


if __name__ == '__main__':
  if len(sys.argv) != 2:
    sys.exit(__doc__)
  main(sys.argv[1])
