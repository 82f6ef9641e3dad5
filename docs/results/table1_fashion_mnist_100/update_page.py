"""Writes the regenerated parts of docs/results/table1_fashion_mnist_100.md.

  python docs/results/table1_fashion_mnist_100/update_page.py ROOT

Run after `bin/sweep --tables_only` (the page's Commands). Replaces what lies between each
pair of markers `<!-- begin NAME -->` / `<!-- end NAME -->` on the page:
  comparison: comparison.md as bin/sweep wrote it (per cell, ranks, Spearman's ρ);
  takeaways:  takeaways.py's verdicts, wrapped for the page;
  wall_times: wall_times.py's table.
The prose around them (the status of the sweep, the diagnoses) is written by hand.
"""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import takeaways  # pylint: disable=g-import-not-at-top
import wall_times  # pylint: disable=g-import-not-at-top
from tf_ipmssl.sweep import results_page  # pylint: disable=g-import-not-at-top

PAGE = HERE.parent / 'table1_fashion_mnist_100.md'


def main(root):
  text = PAGE.read_text()
  def splice(text, name, body):
    return results_page.splice(text, name, body, str(PAGE))
  text = splice(text, 'comparison', (HERE / 'comparison.md').read_text())
  text = splice(text, 'takeaways', '\n'.join(results_page.wrapped(line)
                                              for line in takeaways.verdicts(root)))
  text = splice(text, 'wall_times', '\n'.join(wall_times.table(root)))
  PAGE.write_text(text)
  print(f'Wrote {PAGE}')


if __name__ == '__main__':
  if len(sys.argv) != 2:
    sys.exit(__doc__)
  main(sys.argv[1])
