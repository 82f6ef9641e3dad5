"""Error rates as counts make them: 100 · mistakes / images, read back exactly from the run
state's float32 variables."""
import json

import numpy as np

from tf_ipmssl.training import evaluation


def test_a_rate_is_one_division_of_its_count():
  assert json.dumps(evaluation.percent(2556, 10000)) == '25.56'
  assert json.dumps(evaluation.percent(909, 1000)) == '90.9'
  assert evaluation.percent(1, 3) == 100 / 3
  assert evaluation.percent(0, 0) == 0.0


def test_every_count_is_read_back_from_its_float32_rounding():
  """Every count k of the usual split sizes (and a prime, and the largest test set, SVHN's):
  the float32 a checkpoint holds gives back percent(k, n) exactly."""
  for examples in (20, 31, 1000, 5000, 10000, 26032):
    for mistakes in range(examples + 1):
      rate = evaluation.percent(mistakes, examples)
      stored = np.float32(rate)
      assert evaluation.stored_percent(stored, examples) == rate, (mistakes, examples)
  assert np.isnan(evaluation.stored_percent(np.float32(np.nan), 10))
