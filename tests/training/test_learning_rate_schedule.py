"""The learning-rate schedule: halving by epochs and the linear decay to 0 (an option)."""
import os

import pytest

from tests.reliability import checks
from tests.training import runs
from tf_ipmssl.training import optimizers
from tf_ipmssl.run_dir import event_files


@pytest.mark.parametrize('step, expected', [
    (0, 1.0), (5, 1.0), (6, 4 / 4), (7, 3 / 4), (9, 1 / 4),  # 10 steps, decay from step 6.
])
def test_linear_decay_reaches_zero_after_the_last_step(step, expected):
  factor = optimizers.learning_rate_factor(step, 10, epoch=0.0, linear_decay_start=0.6)
  assert factor == pytest.approx(expected, abs=1e-12)


def test_no_schedule_and_halving_and_their_product():
  factor = optimizers.learning_rate_factor
  assert factor(7, 10, epoch=99.0) == 1.0
  assert factor(7, 10, epoch=2.5, halving_epochs=1.0) == 0.25  # floor(2.5) halvings.
  assert factor(7, 10, epoch=2.5, halving_epochs=1.0, linear_decay_start=0.5) == (
      pytest.approx(0.25 * 3 / 5, abs=1e-12))
  assert factor(3, 8, epoch=0.0, linear_decay_start=0.0) == pytest.approx(5 / 8, abs=1e-12)


def test_a_run_logs_the_decayed_learning_rates(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  model_dir = str(tmp_path / 'run')
  bindings = runs.tiny_bindings(data_dir, **{
      'train.steps': 8, 'train.log_every': 1, 'train.eval_every': 8,
      'train.checkpoint_every': 8, 'train.sample_every': 8,
      'train.critic_learning_rate': 1e-3, 'train.generator_learning_rate': 5e-4,
      'train.learning_rate_linear_decay_start': 0.5})
  result = runs.run_train(model_dir, bindings)
  assert result.returncode == 0, result.stderr[-2000:]
  scalars = event_files.read_scalars(os.path.join(model_dir, 'train'))
  # The line logged after step s shows the rate its update used: the factor of step s − 1,
  # 1 up to step 4, then (8 − (s − 1)) / 4.
  expected = [1.0, 1.0, 1.0, 1.0, 1.0, 0.75, 0.5, 0.25]
  for tag, base in (('learning_rate/critic', 1e-3), ('learning_rate/generator', 5e-4)):
    assert [s for s, _ in scalars[tag]] == list(range(1, 9))
    assert [v for _, v in scalars[tag]] == pytest.approx([base * e for e in expected],
                                                         rel=1e-6)


def test_decay_start_outside_the_run_is_one_line(tmp_path):
  data_dir = runs.make_data(tmp_path / 'data')
  result = runs.run_train(str(tmp_path / 'run'), runs.tiny_bindings(
      data_dir, **{'train.learning_rate_linear_decay_start': 1.0}))
  checks.assert_one_error_line(
      result, 'error: train.learning_rate_linear_decay_start is a fraction of the run in '
      '[0, 1), got 1.0')
