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
import re
import sys
import textwrap

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import takeaways  # pylint: disable=g-import-not-at-top
import wall_times  # pylint: disable=g-import-not-at-top

PAGE = HERE.parent / 'table1_fashion_mnist_100.md'
WIDTH = 92


def _wrapped(item):
  """A markdown list item ('- ...') wrapped at WIDTH, its continuation lines indented."""
  return textwrap.fill(item[2:], WIDTH, initial_indent='- ', subsequent_indent='  ',
                       break_long_words=False, break_on_hyphens=False)


def splice(text, name, body):
  """`text` with the lines between the markers of `name` replaced by `body`."""
  pattern = re.compile(rf'(<!-- begin {name} -->\n).*?(<!-- end {name} -->)', re.DOTALL)
  text, count = pattern.subn(
      lambda m: m.group(1) + body.rstrip('\n') + '\n' + m.group(2), text)
  if count != 1:
    raise SystemExit(f'{PAGE} needs one pair of markers <!-- begin {name} --> / '
                     f'<!-- end {name} -->; it has {count}')
  return text


def main(root):
  text = PAGE.read_text()
  text = splice(text, 'comparison', (HERE / 'comparison.md').read_text())
  text = splice(text, 'takeaways', '\n'.join(_wrapped(line) for line in takeaways.verdicts(root)))
  text = splice(text, 'wall_times', '\n'.join(wall_times.table(root)))
  PAGE.write_text(text)
  print(f'Wrote {PAGE}')


if __name__ == '__main__':
  if len(sys.argv) != 2:
    sys.exit(__doc__)
  main(sys.argv[1])
