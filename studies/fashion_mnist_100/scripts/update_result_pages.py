#!/usr/bin/env python3
"""Regenerates the generated parts of the miniature Tables 1-3 pages and the conclusions page.

  studies/fashion_mnist_100/scripts/update_result_pages.py                       # from each table's runs.csv
  studies/fashion_mnist_100/scripts/update_result_pages.py --records=DIR         # + the run records under DIR

Each table's runs come from docs/results/table<k>_fashion_mnist_100/runs.csv (written by
`bin/sweep --tables_only`); with --records, the records under DIR (laid out as a sweep root,
DIR/<cell id>/seed_<s>) replace the rows of the same cell and seed, and the Table 2 and 3
pages name the runs known from their runs.csv row alone. Writes the parts between the
pages' `<!-- begin NAME -->` / `<!-- end NAME -->` markers (studies/fashion_mnist_100/paper_pages.py):
take-aways and the three conclusions under the pair rule of studies/fashion_mnist_100/claims.py, the
comparison with the paper, status, labeled-set errors and wall times; README.md's
three verdict lines; and the augmentation page's measurement (docs/results/augmentation.md,
studies/fashion_mnist_100/augmentation_page.py) from the records of studies/fashion_mnist_100/scripts/augmentation_effect.sh.
"""
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
from tf_ipmssl import programs  # pylint: disable=g-import-not-at-top
programs.use_checkout_venv(__file__)  # Outside any venv: the checkout's .venv.

from absl import flags  # pylint: disable=g-import-not-at-top

from tf_ipmssl import command_line
from tf_ipmssl import errors
from studies.fashion_mnist_100 import augmentation_page
from studies.fashion_mnist_100 import paper_pages
from studies.fashion_mnist_100 import results_page

flags.DEFINE_string('results_dir', str(REPO / 'docs' / 'results'),
                    'The folder of the pages and of the tables\' folders with their runs.csv.')
flags.DEFINE_string('readme', str(REPO / 'README.md'),
                    'The README whose verdict lines (its `verdicts` part) are regenerated; '
                    'empty: none.')
flags.DEFINE_string('records', None, 'A folder of run records (DIR/<cell id>/seed_<s>); '
                    'they replace the runs.csv rows of the same cell and seed.')
flags.DEFINE_string('augmentation_records',
                    str(REPO / 'docs' / 'results' / 'augmentation_records'),
                    'The records of studies/fashion_mnist_100/scripts/augmentation_effect.sh (DIR/<arm>/<cell id>/'
                    'seed_<s>) that the augmentation page tabulates; empty: that page is '
                    'left as it is.')
FLAGS = flags.FLAGS

AUGMENTATION_PAGE = 'augmentation.md'


def main(argv):
  if len(argv) > 1:
    raise errors.ConfigError(f'unexpected arguments {argv[1:]}; use --results_dir/--records')
  for path, what in ((FLAGS.results_dir, '--results_dir'), (FLAGS.records, '--records')):
    if path is not None and not os.path.isdir(path):
      raise errors.ConfigError(f'{what}={path} is not a folder')
  for page in paper_pages.write(FLAGS.results_dir, FLAGS.records,
                                   FLAGS.readme or None):
    print(f'Wrote {page}')
  if FLAGS.augmentation_records:
    page = os.path.join(FLAGS.results_dir, AUGMENTATION_PAGE)
    records = augmentation_page.collect(FLAGS.augmentation_records)
    results_page.rewrite(page, {augmentation_page.PART: augmentation_page.part(records)})
    print(f'Wrote {page}')


if __name__ == '__main__':
  command_line.run(main)
