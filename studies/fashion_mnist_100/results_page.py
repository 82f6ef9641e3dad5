"""Regenerated parts of a results page (docs/results/*.md) and the wall time of its runs.

A page marks each regenerated part with a pair of lines `<!-- begin NAME -->` and
`<!-- end NAME -->`; `splice` replaces what lies between them and leaves the prose around
them (written by hand) as it is; `part` reads it.
"""
import glob
import os
import re
import textwrap
from typing import Dict, List

from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import results as results_lib

WIDTH = 92


def wrapped(item: str, width: int = WIDTH) -> str:
  """A markdown list item ('- ...') wrapped at `width`, its continuation lines indented."""
  return textwrap.fill(item[2:], width, initial_indent='- ', subsequent_indent='  ',
                       break_long_words=False, break_on_hyphens=False)


def splice(text: str, name: str, body: str, page: str = 'the page') -> str:
  """`text` with the lines between the markers of `name` replaced by `body`."""
  pattern = re.compile(rf'(<!-- begin {name} -->\n).*?(<!-- end {name} -->)', re.DOTALL)
  text, count = pattern.subn(
      lambda m: m.group(1) + body.rstrip('\n') + '\n' + m.group(2), text)
  if count != 1:
    raise SystemExit(f'{page} needs one pair of markers <!-- begin {name} --> / '
                     f'<!-- end {name} -->; it has {count}')
  return text


def rewrite(path: str, bodies: Dict[str, str]):
  """The page at `path` with each part named in `bodies` replaced by its body (`splice`)."""
  with open(path) as f:
    text = f.read()
  for name, body in bodies.items():
    text = splice(text, name, body, path)
  with open(path, 'w') as f:
    f.write(text)


def part(text: str, name: str, page: str = 'the page') -> str:
  """What lies between the markers of `name` in `text`."""
  found = re.findall(rf'<!-- begin {name} -->\n(.*?)<!-- end {name} -->', text, re.DOTALL)
  if len(found) != 1:
    raise SystemExit(f'{page} needs one pair of markers <!-- begin {name} --> / '
                     f'<!-- end {name} -->; it has {len(found)}')
  return found[0]


def table_rows(body: str, columns: int, page: str, header: str) -> List[List[str]]:
  """The cells of each row of the markdown table `body` (a part of the page `page`), but its
  header (the row whose first cell is `header`) and separator rows; a ConfigError for a row
  of another number of columns than `columns`."""
  rows = []
  for line in body.splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if not line.strip() or set(cells[0]) <= set('-') or cells[0] == header:
      continue
    if len(cells) != columns:
      raise errors.ConfigError(f'{page}: a row of {len(cells)} columns, not {columns}: '
                               f'{line.strip()}')
    rows.append(cells)
  return rows


def session_spans(model_dir: str) -> List[float]:
  """Seconds from the first to the last scalar of each events file of the run's train/
  (one file per bin/train session; its start-up before the first logged step not counted)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  spans = []
  pattern = os.path.join(model_dir, run_files.TRAIN_SUMMARY_DIR, 'events.out.tfevents.*')
  for path in sorted(glob.glob(pattern)):
    times = [event.wall_time for event in tf.compat.v1.train.summary_iterator(path)
             if event.summary.value]
    if times:
      spans.append(max(times) - min(times))
  return spans


def wall_time_table(results: Dict[str, results_lib.CellResult]) -> List[str]:
  """A markdown table's lines: per finished run, its bin/train sessions' spans and total."""
  lines = ['| cell | seed | sessions | span of each (s) | total (s) |',
           '|---|---:|---:|---|---:|']
  for result in results.values():
    for run in result.runs:
      spans = session_spans(run.model_dir)
      lines.append(f'| {result.cell.id} | {run.seed} | {len(spans)} | '
                   f'{", ".join(f"{s:,.0f}" for s in spans)} | {sum(spans):,.0f} |')
  return lines
