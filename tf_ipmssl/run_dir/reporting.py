"""What a run reports: metrics.json and the final line.

metrics.json (run_files.METRICS_FILE), rewritten at every checkpoint and at the end:

- `step`, `total_steps`: steps done and planned; `finished`: training (and the export, if
  wanted) complete; `stopped_early`: the step of an early stop (absent otherwise);
- `final`: the latest evaluation, the last one once the run has finished (the key's name is
  the file's; the code calls it the latest or last evaluation): {`step`, `validation_error`,
  `test_error`, `labeled_error`} (errors in %, each 100 · mistakes / images as one division
  makes it: 25.56 for 2556 of 10,000, whether the run reports it from memory or from its
  checkpoint;
  `test_error` is null at evaluations where it was not computed, see loop.Loop.evaluate,
  and always without a test split (an image folder without test/); `labeled_error`: the
  error on the labeled training images, with the evaluated weights);
- `best`: the same keys at the best validation error so far (step −1 and nulls without a
  validation split; `labeled_error` null where the checkpoint holds none) — `best.test_error` is the number to report
  (docs/algorithm.md#data-and-model-selection);
- `multipliers`: λ per constraint; `exported`: {`checkpoint`: 'best' | 'latest', `step`}
  once exported; `wall_seconds_this_session`: at the end, this bin/train session's wall time;
  `wall_seconds`: the run's wall time over all its sessions, each counted from its start to
  its latest metrics.json (a killed session's work after its last checkpoint, which the next
  session redoes, is not counted; absent where the earlier sessions' time is unknown: see
  the history below); `wall_split`: the same wall time by part (wall_time.PARTS: `startup`,
  `training`, `evaluation`, `checkpoints`, `export`, `teardown`, in seconds, adding up to
  `wall_seconds`; absent where `wall_seconds` is, and in older files);
  `wall_split_this_session`: at the end, the current session's; `diverged_before_step` when
  a loss became NaN/Inf;
- `class_names`: the name of each class, by label (the exported classifier answers them).
- `foreign_test`, only for a run on a subset of its dataset's classes (build_ssl_data.classes)
  with test images of the others: how well the classifier the run reports (that of `best`'s
  step, else the last step's; the exported one, whether or not it is exported) calls those
  images none of its classes (docs/foreign_score.md): {`step`, `checkpoint` ('best' |
  'latest'), `known_images`, `foreign_images` (the test images of the run's classes and of
  the others), `default` (the score an export applies), `fitted_on` ('validation' |
  'labeled'), `pass_share`, `scores`: {score name (foreign_score.names_for the run's
  formulation): {`auroc` (a fraction: the chance that a foreign test image scores higher
  than a known one, ties half; 0.5 is chance), `threshold` (the export's, fixed on the
  validation images, else the labeled ones), `rejected_known_pct`, `rejected_foreign_pct`
  (the known and the foreign test images past it, in %)}}}. Measured once at the end,
  after training, without RNG.
- in `best` and `final`, per split ('validation', 'test'; class_results.py): its confusion
  matrix `<split>_confusion` (counts, a list of rows, rows the true class: row c sums to
  the split's images of class c, and the trace gives the split's error exactly),
  `<split>_class_errors` ({class name: error in %}, null for a class without images) and
  `<split>_balanced_error` (the mean of the class errors); all three null where the split's
  error was not computed (or, in a run resumed from a checkpoint older than them, is not
  known).

History: every reader takes an older metrics.json as it is, a key it lacks being unknown.
One written before the trainer wrote `wall_seconds` lacks it, and so does every later one of
a run resumed from it (its earlier sessions' wall time is unknown; the sweep's tables then
take the last session's, `wall_seconds_this_session`); `wall_split` came later still. One
written before the labeled-set errors lacks `best.labeled_error` and `final.labeled_error`;
one written before the per-class results lacks their keys; one written before `foreign_test`
lacks it.

An error rate is a count of mistakes over a known number of images, given in percent as
`percent` makes it (100 · 2556 / 10000 = 25.56). The run state keeps the errors in float32
variables; `stored_percent` turns such a value back into the rate of its count, so that what
a run reports is the same whether it comes from memory or from a checkpoint.
"""
import math

from tf_ipmssl.run_dir import baseline as baseline_lib
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import wall_time

# The keys of an evaluation in metrics.json (its `final` and `best`).
EVALUATION_KEYS = ('step', 'validation_error', 'test_error', 'labeled_error')


def run_data(data):
  """The baseline.RunData (dataset, labels, split seed) of ssl_data.SSLData `data`."""
  return baseline_lib.RunData(dataset=data.name, labels=data.num_labeled,
                              split_seed=data.split_seed)


def evaluated_examples(data):
  """{error key of EVALUATION_KEYS: the number of images it counts over} of ssl_data.SSLData
  `data`."""
  return {'validation_error': len(data.validation_labels), 'test_error': len(data.test_labels),
          'labeled_error': len(data.labeled_labels)}


def percent(mistakes, examples):
  """The error rate in percent of `mistakes` among `examples`: 100 · mistakes / examples, one
  correctly rounded division (0 for no examples)."""
  return 100.0 * mistakes / max(examples, 1)


def stored_percent(value, examples):
  """The error rate `percent(k, examples)` whose float32 rounding is `value` (a run state's
  variable): k = round(value · examples / 100). Exact for any examples below 10^7 (float32
  keeps a rate within 4e-6 of itself, half the gap between two counts is 50 / examples); a
  non-finite value (an error not computed) is returned as it is."""
  value = float(value)
  if not math.isfinite(value):
    return value
  return percent(round(value * examples / 100.0), examples)


def evaluation_of(variables, examples):
  """{EVALUATION_KEYS: values} of run.RunState's `best` or `latest` variables (None for an
  error not computed, NaN there); each error the rate of its count over
  `examples` (evaluated_examples), as the evaluation computed it (stored_percent), not its
  float32 rounding."""
  def number(key):
    v = stored_percent(variables[key].numpy(), examples[key])
    return None if not math.isfinite(v) else v
  errors = {key: number(key) for key in EVALUATION_KEYS if key != 'step'}
  return {'step': int(variables['step'].numpy()), **errors}


def metrics_content(latest, extra, state, examples, step, total_steps, finished,
                    per_class=None):
  """metrics.json's content: `latest` (the latest evaluation, under `final`), `extra` (other
  keys of the module doc) and the run state's best (its errors over `examples`,
  evaluated_examples) and multipliers; `per_class`: {'best': ..., 'final': ...}, the
  per-class keys of each (class_results.of_variables)."""
  per_class = per_class or {}
  out = dict(extra)
  out.update({
      'step': step, 'total_steps': total_steps, 'finished': finished,
      'final': {**latest, **per_class.get('final', {})},
      'best': {**evaluation_of(state.best, examples), **per_class.get('best', {})},
      'multipliers': {k: float(v.numpy()) for k, v in state.multipliers.items()},
  })
  return out


def final_line(step, metrics, baseline=None, data=None):
  """The run's result: the test error at the best validation step (the number to report,
  docs/algorithm.md#data-and-model-selection) first, then the last step's; with `baseline`
  (train.baseline) and `data` (baseline.RunData), the comparison of baseline.py; last, the
  largest parts of the run's wall time besides its training steps (time_text)."""
  return _result_text(step, metrics, baseline, data) + time_text(metrics.get('wall_split'))


def _result_text(step, metrics, baseline, data):
  best, last = metrics['best'], metrics['final']
  if best['step'] < 0:
    return (f'Finished {step} steps: test error {fmt(last["test_error"])} at the last step '
            '(no validation split, so no model selection)')
  line = (f'Finished {step} steps: test error {fmt(best["test_error"])} at the best '
          f'validation step {best["step"]} (validation {fmt(best["validation_error"])}); '
          f'last step: test error {fmt(last["test_error"])}')
  exported = metrics.get('exported')
  if baseline and data:
    line += baseline_lib.comparison_text(baseline, data, best['test_error'])
  if exported:
    line += f'. {run_files.EXPORT_DIR}/ holds the classifier of step {exported["step"]}'
  return line + foreign_test_text(metrics.get('foreign_test'))


def foreign_test_text(foreign_test):
  """'. Test images of the other classes: ...' of metrics.json's `foreign_test` (the default
  score's AUROC and rejected shares); '' without it."""
  if not foreign_test:
    return ''
  name = foreign_test['default']
  score = foreign_test['scores'][name]
  return (f'. Test images of the other classes: AUROC {score["auroc"]:.3f} by the {name} '
          f'score, {score["rejected_foreign_pct"]:.0f}% of them rejected at its threshold '
          f'(known test images {score["rejected_known_pct"]:.0f}%)')


def time_text(split):
  """'. Wall time T s, of it P1 x% and P2 y%' for the (at most two) largest parts of the
  wall-time split besides the training steps that exceed 10% of it; '' when none does."""
  parts = wall_time.largest_besides_training(split or {})
  if not parts:
    return ''
  shares = ' and '.join(f'{wall_time.NAMES[part]} {fraction:.0%}' for part, fraction in parts)
  return f'. Wall time {sum(split.values()):.0f} s, of it {shares}'


def fmt(value):
  return 'n/a' if value is None else f'{value:.2f}%'
