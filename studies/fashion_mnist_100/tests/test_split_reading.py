"""The earlier runs re-read with the label split as the unit."""
import os
import pathlib

import pytest

from studies.fashion_mnist_100 import confirmation
from studies.fashion_mnist_100 import paper_pages
from studies.fashion_mnist_100 import split_reading

REPO = str(pathlib.Path(__file__).resolve().parents[3])  # The checkout.
RESULTS = os.path.join(REPO, 'docs', 'results')


def test_every_reading_is_a_contrast_and_the_interaction_is_the_confirmations():
  for reading in split_reading.READINGS:
    assert sum(w for _, w in reading.weights) == pytest.approx(0.0)
  plan = confirmation.read_plan(os.path.join(RESULTS, confirmation.PAGE))
  interaction = dict(split_reading.READINGS[4].weights)
  assert interaction == dict(plan.families[0].weights)
  assert dict(split_reading.READINGS[1].weights) == dict(plan.families[1].weights)


def test_the_committed_runs_read_as_an_independent_recomputation_found():
  """The batch-norm family with its cell labels permuted within each split: p = 0.0031 at
  the best step and 0.00051 late (as recomputed by code that shares nothing with this one);
  every split-level contrast of five splits in one direction gives 1/32."""
  table1, table23, _ = paper_pages.load(RESULTS, os.path.join(RESULTS, 'tables23_records'))
  broadcast = paper_pages.load_broadcast(RESULTS)
  found = {(r.name, r.endpoint): r for r in split_reading.read(
      split_reading.observations({**table1, **table23}, broadcast))}
  name = split_reading.BATCH_NORM_NAME
  assert found[(name, 'best step')].test.p_value == pytest.approx(0.0031, abs=5e-5)
  assert found[(name, 'late')].test.p_value == pytest.approx(0.00051, abs=5e-6)
  interaction = found[(split_reading.READINGS[4].name, 'best step')]
  assert interaction.contrasts == pytest.approx([14.04, 13.13, 6.8, 9.9, 9.27], abs=0.006)
  assert interaction.test.p_value == 1 / 32
  first = found[(split_reading.READINGS[0].name, 'best step')]
  assert (first.test.n, first.test.p_value) == (3, 1 / 8)
