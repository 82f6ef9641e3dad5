#!/usr/bin/env python3
"""Regenerates the results and readings parts of studies/user_data/README.md, its figure
(gain_per_condition.png) and README's lines on the study (its verdicts, and the numbers
"Your own images" gives) from the study's records.

  .venv/bin/python studies/user_data/scripts/update_page.py [--records=studies/user_data/records]
"""
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
from tf_ipmssl import programs  # pylint: disable=g-import-not-at-top
programs.use_checkout_venv(__file__)  # Outside any venv: the checkout's .venv.

from absl import flags  # pylint: disable=g-import-not-at-top

from studies.fashion_mnist_100 import results_page
from studies.user_data import figure
from studies.user_data import plan as plan_lib
from studies.user_data import readings
from studies.user_data import verdicts
from tf_ipmssl import command_line

flags.DEFINE_string('records', str(REPO / 'studies' / 'user_data' / 'records'),
                    'The records (one archive per part).')
flags.DEFINE_string('readme', str(REPO / 'README.md'),
                    'The README whose user_data verdict lines are regenerated.')
FLAGS = flags.FLAGS
README_PARTS = ('user_data verdicts', 'user_data measured')


def main(argv):
  del argv
  plan = plan_lib.read_plan()
  results_page.rewrite(plan_lib.PAGE, {
      plan_lib.RESULTS_PART: verdicts.results_part(plan, FLAGS.records),
      plan_lib.READINGS_PART: readings.readings_part(plan, FLAGS.records)})
  picture = os.path.join(os.path.dirname(plan_lib.PAGE), figure.NAME)
  figure.write(picture, [(c.name, g) for c, g in readings.gains(plan, FLAGS.records)],
               plan.seeds)
  results_page.rewrite(FLAGS.readme, {
      README_PARTS[0]: verdicts.readme_lines(plan, FLAGS.records),
      README_PARTS[1]: readings.readme_part(plan, FLAGS.records)})
  print(f'Wrote {plan_lib.PAGE}, {picture} and {FLAGS.readme}')


if __name__ == '__main__':
  command_line.run(main)
