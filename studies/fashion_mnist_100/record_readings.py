"""Readings of the records' evaluation curves beyond their metrics.json, for this study's
pages: each run's lowest labeled-set error over its evaluations (paper_claims' underfitting
check), and each run's reported error moved to the earliest of its tied best validation
steps (records of a trainer that broke such ties late; the confirmation and Tables 2-3).

Each reads the runs' eval/ TensorBoard events (event_files: a call imports TensorFlow, an
import of this module does not) and returns the sweep's results (results.collect) with
RunResult fields replaced.
"""
import dataclasses
from typing import Dict, List, Tuple

from tf_ipmssl.run_dir import run_files
from tf_ipmssl.sweep import results as results_lib

Results = Dict[str, results_lib.CellResult]

# A run's errors at each evaluation, in its eval/ TensorBoard events.
LABELED_ERROR_CURVE = 'eval/labeled_error'
TEST_ERROR_CURVE, VALIDATION_ERROR_CURVE = 'eval/test_error', 'eval/validation_error'


def with_lowest_labeled_errors(results: Results) -> Results:
  """`results` with each run's lowest labeled-set error over its evaluations, read from the
  eval curve kept in its model directory; runs without the curve are left as they are."""
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top

  def lowest(run):
    curve = event_files.read_eval_curves(run.model_dir).get(LABELED_ERROR_CURVE)
    if not curve:
      return run
    return dataclasses.replace(run, lowest_labeled_error=min(curve.values()))
  return {cell_id: dataclasses.replace(result, runs=tuple(lowest(r) for r in result.runs))
          for cell_id, result in results.items()}


def with_earliest_tied_best(results: Results
                            ) -> Tuple[Results, List[Tuple[str, int, int, int, float, float]]]:
  """`results` with each run's reported error taken at `results.earliest_tied_step` of its
  eval curve, and what moved: (cell id, seed, recorded best step, earliest tied step,
  recorded error, error at the earlier step). A trainer before lower_error compared the new
  error in float64 with the stored best in float32, so an equal count of wrong images at a
  later step won the tie whenever the percentage's float32 rounding lay above it; such a
  run's metrics.json names the later step. Runs without their curve (or whose earlier step
  has no test error) are left as they are."""
  from tf_ipmssl.run_dir import event_files  # pylint: disable=g-import-not-at-top
  moved = []

  def earliest(cell_id, run):
    metrics = run_files.read_metrics(run.model_dir, unreadable_ok=True) or {}
    recorded = (metrics.get('best') or {}).get('step', -1)
    curves = event_files.read_eval_curves(run.model_dir)
    step = results_lib.earliest_tied_step(curves.get(VALIDATION_ERROR_CURVE, {}))
    test = curves.get(TEST_ERROR_CURVE, {}).get(step)
    if step is None or recorded < 0 or step == recorded or test is None:
      return run
    moved.append((cell_id, run.seed, recorded, step, run.test_error, test))
    return dataclasses.replace(
        run, test_error=test, best_step=step, balanced_error=None, class_errors=None,
        labeled_error=curves.get(LABELED_ERROR_CURVE, {}).get(step))

  replaced = {cell_id: dataclasses.replace(
      result, runs=tuple(earliest(cell_id, r) if r.has_record else r for r in result.runs))
              for cell_id, result in results.items()}
  return replaced, moved
