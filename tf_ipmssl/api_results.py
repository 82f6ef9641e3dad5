"""What the Python API's functions return (api.py, which gives these names too): a run's
report (TrainResult), an error with its per-class parts (Evaluation), where an export went
(ExportedClassifier) and a classifier's answers (Predictions).
"""
import csv
import dataclasses
import os
from typing import Optional, Tuple, Union

import numpy as np

from tf_ipmssl.run_dir import class_results
from tf_ipmssl.run_dir import reporting
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.serving import foreign_score

PathLike = Union[str, os.PathLike]


@dataclasses.dataclass(frozen=True)
class TrainResult:
  """What a run reports: its metrics.json (run_dir/reporting.py), errors in percent.

  Attributes:
    model_dir: the run directory.
    steps: the steps trained.
    test_error: the number to report: the test error at the best validation step (the
      last step's without a validation split; docs/algorithm.md#data-and-model-selection).
    best_step: the step selected on validation; None without a validation split.
    validation_error: the validation error at best_step; None without a validation split.
    last_test_error: the test error of the last evaluation.
    export_dir: the exported classifier, best_step's (the last step's without a validation
      split); None under `train.export_classifier = False`.
    metrics: metrics.json as a whole.
  """
  model_dir: str
  steps: int
  test_error: Optional[float]
  best_step: Optional[int]
  validation_error: Optional[float]
  last_test_error: Optional[float]
  export_dir: Optional[str]
  metrics: dict

  @classmethod
  def of(cls, model_dir, metrics) -> 'TrainResult':
    best, last = metrics['best'], metrics['final']  # 'final': the last evaluation.
    selected = best['step'] >= 0
    return cls(model_dir=model_dir, steps=metrics['step'],
               test_error=best['test_error'] if selected else last['test_error'],
               best_step=best['step'] if selected else None,
               validation_error=best['validation_error'] if selected else None,
               last_test_error=last['test_error'],
               export_dir=(os.path.join(model_dir, run_files.EXPORT_DIR)
                           if metrics.get('exported') else None),
               metrics=metrics)


@dataclasses.dataclass(frozen=True)
class Evaluation:
  """A classification error, as bin/evaluate prints it (a JSON object of these fields).

  Attributes:
    source: the checkpoint or export evaluated.
    split: 'test', 'validation' or 'labeled'.
    examples: the images of the split.
    error: the error in percent (100 · mistakes / examples).
    class_errors: {class name: the error in percent on the split's images of that class}
      (None for a class without images there), in label order.
    balanced_error: the mean of the class errors (classes without images left out).
    confusion: the confusion matrix, a list of rows: [t][p] counts the images of class t
      predicted as p; the trace gives `error` exactly (run_dir/class_results.py).
  """
  source: str
  split: str
  examples: int
  error: float
  class_errors: Optional[dict] = None
  balanced_error: Optional[float] = None
  confusion: Optional[list] = None

  @classmethod
  def of(cls, source, split, confusion, class_names) -> 'Evaluation':
    """The Evaluation of a confusion matrix (numpy int [K, K]) of `split`."""
    return cls(source, split, int(confusion.sum()), class_results.error(confusion),
               dict(zip(class_names, class_results.class_errors(confusion))),
               class_results.balanced_error(confusion), confusion.tolist())

  def text(self) -> str:
    """The evaluation as a few lines for a person: the error, then each class's."""
    lines = [f'{self.split} error {self.error:.2f}% of {self.examples:,} images '
             f'({self.source}); balanced error '
             f'{reporting.fmt(self.balanced_error)} (the mean of the classes\' errors)']
    if self.class_errors:
      width = max(len(name) for name in self.class_errors)
      for c, (name, error) in enumerate(self.class_errors.items()):
        lines.append(f'  {name:<{width}}  {reporting.fmt(error):>7}  of '
                     f'{sum(self.confusion[c]):,}')
    return '\n'.join(lines)


@dataclasses.dataclass(frozen=True)
class ExportedClassifier:
  """Where `export` wrote the classifier (README, "The classifier"), and from which
  checkpoint.

  Attributes:
    export_dir: the directory of the first format written (the SavedModel's by default).
    checkpoint: the checkpoint exported.
    directories: each format written -> its directory (formats.directory); not compared
      (export_dir names the export).
  """
  export_dir: str
  checkpoint: str
  directories: dict = dataclasses.field(default_factory=dict, compare=False)


@dataclasses.dataclass(frozen=True, eq=False)
class Predictions:
  """An exported classifier's answers, one row per classified image.

  Attributes:
    labels: int32 [N], the predicted class of each image.
    probabilities: float32 [N, K], each class's probability.
    class_names: every class's name, by label (the columns of probabilities).
    paths: the file of each row (image files only; () for arrays).
    skipped: (file, why) for each file that could not be classified.
    scores: float32 [N, S], each image's "none of these classes" scores (higher: less like
      the classes; serving/foreign_score.py), None for an export written before them.
    rule: the export's scores and threshold rule (foreign_score.Rule) with the score applied
      (`score`, `none_of_these`): predict's `score`, by default the export's default; its
      names, that score's name and threshold are `score_names`, `score_name`, `threshold`.
  """
  labels: np.ndarray
  probabilities: np.ndarray
  class_names: Tuple[str, ...]
  paths: Tuple[str, ...] = ()
  skipped: Tuple[Tuple[str, str], ...] = ()
  scores: Optional[np.ndarray] = None
  rule: Optional[foreign_score.Rule] = None

  @property
  def label_names(self) -> Tuple[str, ...]:
    """The predicted class's name, per row."""
    return tuple(self.class_names[label] for label in self.labels)

  @property
  def score_names(self) -> Tuple[str, ...]:
    """The columns of `scores` (() without scores)."""
    return self.rule.names if self.rule else ()

  @property
  def score_name(self) -> Optional[str]:
    """The score applied (None without scores)."""
    return self.rule.name if self.rule else None

  @property
  def threshold(self) -> Optional[float]:
    """score_name's threshold, fixed on the run's known images when it was exported (the
    value 95% of its validation images, else its labeled images, score at or below); None
    without scores."""
    return self.rule.threshold if self.rule else None

  @property
  def score(self) -> Optional[np.ndarray]:
    """float32 [N]: each image's score_name score (None without scores)."""
    if self.scores is None:
      return None
    return self.rule.chosen(self.scores)

  @property
  def none_of_these(self) -> Optional[np.ndarray]:
    """bool [N]: the images whose score is past the threshold, called none of the classes
    (None without scores)."""
    return None if self.scores is None else self.rule.rejects(self.score)

  def write_csv(self, path: PathLike) -> None:
    """The rows as bin/predict --output writes them: path, class_name (the predicted
    class's), probability (its), then each class's probability, in columns named after
    the classes; where the export has scores, then `score` (score_name's), `none_of_these`
    (1 past the threshold, else 0) and every score, in columns `score_<name>`."""
    scored = self.scores is not None
    with open(path, 'w', newline='') as f:
      writer = csv.writer(f)
      writer.writerow(['path', 'class_name', 'probability', *self.class_names,
                       *(['score', 'none_of_these', *(f'score_{n}' for n in self.score_names)]
                         if scored else [])])
      for row, (label, probabilities) in enumerate(zip(self.labels, self.probabilities)):
        extra = []
        if scored:
          extra = [f'{self.score[row]:.9g}', int(self.none_of_these[row]),
                   *(f'{q:.9g}' for q in self.scores[row])]
        writer.writerow([self.paths[row] if self.paths else row, self.class_names[label],
                         f'{probabilities[label]:.9g}', *(f'{q:.9g}' for q in probabilities),
                         *extra])
