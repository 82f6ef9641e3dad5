"""The Python API: train a run, evaluate it, export its classifier, load it, predict with it.

  import tf_ipmssl
  result = tf_ipmssl.train('runs/x', ['gin/quickstart.gin'], ['train.steps = 100'])
  tf_ipmssl.evaluate('runs/x', checkpoint='best').error          # percent
  tf_ipmssl.predict(result.export_dir, images).class_names

Each function does what its program does, with the program's defaults: `train` is
bin/train, `evaluate` bin/evaluate, `export` bin/export, `predict` bin/predict (numpy
images, or image files and folders); `load` is the run that bin/evaluate and bin/export
restore. The programs parse their flags and call these (bin/predict classifies files with
prediction.Predictor, as `predict` does). `train` prints what bin/train prints (progress
lines, the final line) and writes the same run directory; the others print nothing.

A mistake of the caller's (a bad gin file or binding, a missing run, a checkpoint that is not
there) raises the library's errors.UserError — errors.ConfigError for a configuration — with
the message the program prints after `error: `, before the model dir is created or changed;
nothing here exits the process.

gin: `train` parses its gin files and bindings into gin's global configuration, cleared
before they are parsed and again when the call returns or raises (gin's search paths for
`include` are put back as they were), so that a run is its own files and bindings alone, as
in a fresh bin/train process: one call never sees another's bindings, nor any the caller
parsed. `evaluate`, `export` and `load` rebuild a run from its run_config.json and neither
read nor change gin (run.run_config_of).

Like the programs, this module sets TensorFlow's defaults of command_line.py (oneDNN kernels
on unless TF_ENABLE_ONEDNN_OPTS is set); they take effect when it is imported before
TensorFlow, which `tf_ipmssl.train` (and the others) do on first use.
"""
import contextlib
import dataclasses
import os
from typing import Optional, Sequence, Tuple, Union

# Before TensorFlow is imported: the programs' TensorFlow settings (the module doc).
from tf_ipmssl import command_line  # pylint: disable=g-bad-import-order,unused-import

import keras
import numpy as np

from tf_ipmssl import configurables
from tf_ipmssl import errors
from tf_ipmssl.data import ssl_data
from tf_ipmssl.run_dir import reporting
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import run_lock
from tf_ipmssl.serving import export as export_lib
from tf_ipmssl.serving import formats as formats_lib
from tf_ipmssl.serving import prediction
from tf_ipmssl.serving import runtimes
from tf_ipmssl.training import evaluation
from tf_ipmssl.training import loop as loop_lib
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config
from tf_ipmssl.training import trainer

SPLITS = ('test', 'validation', 'labeled')
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
    best, final = metrics['best'], metrics['final']
    selected = best['step'] >= 0
    return cls(model_dir=model_dir, steps=metrics['step'],
               test_error=best['test_error'] if selected else final['test_error'],
               best_step=best['step'] if selected else None,
               validation_error=best['validation_error'] if selected else None,
               last_test_error=final['test_error'],
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
  """
  source: str
  split: str
  examples: int
  error: float


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
    class_names: the predicted class's name, per image.
    probabilities: float32 [N, K], each class's probability.
    classes: every class's name, by label (the columns of probabilities).
    paths: the file of each row (image files only; () for arrays).
    skipped: (file, why) for each file that could not be classified.
  """
  labels: np.ndarray
  class_names: Tuple[str, ...]
  probabilities: np.ndarray
  classes: Tuple[str, ...]
  paths: Tuple[str, ...] = ()
  skipped: Tuple[Tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True, eq=False)
class LoadedRun:
  """A run rebuilt from its directory (run.Run.from_model_dir: its run_config.json and
  dataset.json) with one checkpoint's critic restored.

  Attributes:
    model_dir: the run directory.
    run: the run.Run: its configuration (`run.config`, a RunConfig), networks (`run.critic`,
      `run.generator`), optimizers and run state, as restored.
    critic: the restored critic; `critic.classify(pipelines.to_model_input(images))` gives
      class logits of uint8 images.
    checkpoint: the checkpoint restored.
  """
  model_dir: str
  run: run_lib.Run
  critic: keras.Model
  checkpoint: str

  @property
  def config(self) -> run_config.RunConfig:
    return self.run.config

  @property
  def dataset(self) -> dict:
    """dataset.json: name, num_classes, image_shape, class_names, source, resize."""
    return self.run.dataset

  @property
  def metrics(self) -> Optional[dict]:
    """metrics.json as it is now (None before the first checkpoint wrote one)."""
    return run_files.read_metrics(self.model_dir)

  def data(self) -> ssl_data.SSLData:
    """The run's data, rebuilt from its configuration: the same dataset, splits and seeds."""
    return ssl_data.build_ssl_data(self.config.build_ssl_data)

  def evaluate(self, split: str = 'test', batch_size: int = 256) -> Evaluation:
    """The restored critic's error on a split of the run's data, as bin/evaluate computes it
    (evaluation.error_rate, in batches of batch_size)."""
    errors.check_choice(split, SPLITS, 'split')
    images, labels = _split(self.data(), split)
    error = evaluation.error_rate(evaluation.make_predict_fn(self.critic), images, labels,
                                  batch_size)
    return Evaluation(self.checkpoint, split, int(len(labels)), error)


def train(model_dir: PathLike, gin_files: Union[PathLike, Sequence[PathLike]] = (),
          gin_bindings: Union[str, Sequence[str]] = (), *,
          started: Optional[float] = None) -> TrainResult:
  """Trains (or resumes) the run in model_dir, as `bin/train --model_dir=MODEL_DIR
  --gin_file=... --gin_bindings=...` does (README, "Training").

  Args:
    model_dir: the run directory. An existing one resumes from its latest checkpoint (its
      configuration must be the same); a finished one only reports.
    gin_files: gin files, parsed in order (one path: one file); their `include`s are found
      in the checkout's gin/ and in each file's gin/ root.
    gin_bindings: gin bindings applied after them, e.g. 'train.steps = 100' (a string: one).
    started: time.time() at the start of the session whose wall time the run records
      (metrics.json's wall_seconds and wall_split); default: now. bin/train passes its
      process's start.

  A run with `train.deterministic_ops = True` leaves TensorFlow's op determinism on and, where
  the runtime had not started yet, one thread per op, for the rest of the process:
  TensorFlow cannot undo either. Train such runs in a process of their own (bin/train) where
  later work should run at full speed.

  Returns:
    The run's TrainResult.

  Raises:
    errors.ConfigError: a gin file that does not exist, a binding gin cannot parse or that
      the run's configuration refuses; raised before the model dir is created or changed.
    errors.UserError: any other mistake bin/train reports in one line (a missing dataset, a
      model dir of another configuration or held by another trainer, ...).
  """
  model_dir = os.fspath(model_dir)
  with _gin_configuration(_as_list(gin_files), _as_list(gin_bindings)):
    try:
      config = configurables.run_config()  # Before the model dir is created or changed.
    except errors.UserError as e:
      raise errors.without_gin_context(e) from None
    # SIGTERM from here on stops the run in one line and releases the lock (loop.py).
    with loop_lib.on_sigterm(), run_lock.hold(model_dir):
      metrics = trainer.train(model_dir, config, started=started)
  return TrainResult.of(model_dir, metrics)


def load(model_dir: PathLike, checkpoint: str = 'best',
         weights: str = 'evaluated') -> LoadedRun:
  """The run in model_dir with the critic of one checkpoint restored, as bin/evaluate and
  bin/export restore it.

  Args:
    model_dir: a run directory written by `train` (or bin/train).
    checkpoint: 'best' (the best validation step's, the classifier the run reports and
      exports) or 'latest'.
    weights: 'evaluated' (the critic the run evaluates: its weight average under
      train.critic_ema_decay) or 'trained' (the critic itself; latest checkpoint only when
      the run keeps a weight average).
  """
  model_dir = os.fspath(model_dir)
  run = run_lib.Run.from_model_dir(model_dir)
  critic, path = run.restore_critic(checkpoint, weights)
  return LoadedRun(model_dir, run, critic, path)


def evaluate(model_dir: PathLike, checkpoint: str = 'latest', weights: str = 'evaluated',
             export_dir: Optional[PathLike] = None, split: str = 'test',
             batch_size: int = 256) -> Evaluation:
  """The classification error of a run's checkpoint, or of an exported classifier, on a
  split of the run's data (rebuilt from its configuration), as bin/evaluate computes it.

  Args:
    model_dir: the run directory.
    checkpoint, weights: which critic (see `load`); unused with export_dir.
    export_dir: evaluate this exported classifier instead (on model_dir's data).
    split: 'test', 'validation' or 'labeled'.
    batch_size: images per evaluation batch.
  """
  errors.check_choice(split, SPLITS, 'split')
  if not export_dir:
    return load(model_dir, checkpoint, weights).evaluate(split, batch_size)
  export_dir = os.fspath(export_dir)
  config = run_lib.run_config_of(os.fspath(model_dir))
  classifier = runtimes.open_classifier(export_dir)
  images, labels = _split(ssl_data.build_ssl_data(config.build_ssl_data), split)
  predicted = np.concatenate([classifier(images[i:i + batch_size])['labels']
                              for i in range(0, len(images), batch_size)])
  return Evaluation(export_dir, split, int(len(labels)),
                    reporting.percent(int(np.sum(predicted != labels)), len(labels)))


def export(model_dir: PathLike, export_dir: Optional[PathLike] = None,
           checkpoint: str = 'best',
           formats: Union[str, Sequence[str]] = formats_lib.DEFAULT_FORMATS
           ) -> ExportedClassifier:
  """Exports the classifier (Φ + S) of a run's checkpoint, taking uint8 images, in each of
  `formats`, as bin/export does (serving/export.py, onnx_export.py, litert_export.py).

  Args:
    model_dir: the run directory.
    export_dir: where to write the SavedModel; default MODEL_DIR/export_best or
      MODEL_DIR/export_latest, so that the trainer's export/ is replaced only when named.
      The other formats go beside it, to EXPORT_DIR_onnx, EXPORT_DIR_litert and
      EXPORT_DIR_litert_int8 (formats.py). Only an earlier export is ever replaced
      (export.check_export_dir).
    checkpoint: 'best' or 'latest' (see `load`).
    formats: 'saved_model', 'onnx', 'litert', 'litert_int8' (int8 weights): a name, a comma
      list or a sequence.

  Raises:
    errors.UserError: a format whose extra is not installed, a run or checkpoint that is not
      there, an export directory holding anything but an earlier export; raised before
      anything is written.
  """
  names = formats_lib.parse(formats)
  formats_lib.check_available(names)
  model_dir = os.fspath(model_dir)
  base = os.fspath(export_dir) if export_dir else os.path.join(model_dir,
                                                               f'export_{checkpoint}')
  directories = {name: formats_lib.directory(base, name) for name in names}
  for directory in directories.values():
    export_lib.check_export_dir(directory)
  loaded = load(model_dir, checkpoint)
  dataset = loaded.dataset
  arguments = (dataset['num_classes'], dataset['name'], dataset['class_names'],
               dataset['resize'])
  for name, directory in directories.items():
    if name == formats_lib.SAVED_MODEL:
      export_lib.export_classifier(loaded.critic, dataset['image_shape'], directory,
                                   *arguments)
    elif name == formats_lib.ONNX:
      from tf_ipmssl.serving import onnx_export  # pylint: disable=g-import-not-at-top
      onnx_export.export_onnx(loaded.critic, dataset['image_shape'], directory, *arguments)
    else:
      from tf_ipmssl.serving import litert_export  # pylint: disable=g-import-not-at-top
      litert_export.export_litert(loaded.critic, dataset['image_shape'], directory,
                                  *arguments, quantize=name == formats_lib.LITERT_INT8)
  return ExportedClassifier(directories[names[0]], loaded.checkpoint, directories)


def predict(export_dir: PathLike, images) -> Predictions:
  """Classifies images with an exported classifier (a run's export/ folder, or bin/export's
  of any format), as bin/predict does; needs only the export, served by its own runtime
  (runtimes.py: TensorFlow, onnxruntime or LiteRT).

  Args:
    export_dir: the exported classifier (a SavedModel, ONNX or LiteRT export directory).
    images: uint8 images [N, H, W, C] (a numpy array or anything np.asarray takes) in the
      size the export takes (the dataset's native size, 28x28x1 for Fashion-MNIST; an image
      folder's export: any one size); or image files and folders (a path or a list of paths;
      folders are searched at any depth), decoded as bin/predict decodes them.

  Returns:
    Predictions, one row per image; a file that cannot be classified is listed in `skipped`
    with the reason, and the others are classified.
  """
  export_dir = os.fspath(export_dir)
  if isinstance(images, (str, os.PathLike)):
    images = [images]
  if isinstance(images, (list, tuple)) and all(
      isinstance(i, (str, os.PathLike)) for i in images):
    return _predict_files(export_dir, [os.fspath(i) for i in images])
  return _predict_arrays(export_dir, np.asarray(images))


def _predict_files(export_dir, paths):
  predictor = prediction.Predictor(export_dir)
  answers = list(predictor.predict(prediction.image_paths(paths)))
  classified = [p for p in answers if p.problem is None]
  probabilities = (np.stack([p.probabilities for p in classified]) if classified
                   else np.zeros([0, len(predictor.class_names)], np.float32))
  return Predictions(
      labels=np.argmax(probabilities, axis=-1).astype(np.int32),
      class_names=tuple(p.class_name for p in classified), probabilities=probabilities,
      classes=predictor.class_names, paths=tuple(p.path for p in classified),
      skipped=tuple((p.path, p.problem) for p in answers if p.problem is not None))


def _predict_arrays(export_dir, images):
  """Through the export's runtime in bin/predict's batches (runtimes.Classifier checks the
  dtype and shape)."""
  classifier = runtimes.open_classifier(export_dir)
  images = classifier.check(images)  # The UserError that names the shape it takes.
  outputs = [classifier(images[i:i + prediction.BATCH])
             for i in range(0, max(len(images), 1), prediction.BATCH)]
  labels = np.concatenate([o['labels'] for o in outputs])
  classes = classifier.class_names
  return Predictions(
      labels=labels, class_names=tuple(classes[label] for label in labels),
      probabilities=np.concatenate([o['probabilities'] for o in outputs]),
      classes=tuple(classes))


def _split(data, split):
  """(images, labels) of `split` of ssl_data.SSLData `data`; a UserError when it is empty."""
  images, labels = {
      'test': (data.test_images, data.test_labels),
      'validation': (data.validation_images, data.validation_labels),
      'labeled': (data.labeled_images, data.labeled_labels)}[split]
  if not len(labels):
    raise errors.UserError(f'the {split} split of this run is empty')
  return images, labels


def _as_list(values):
  """A path or a string as a list of one; any other sequence as a list."""
  if isinstance(values, (str, os.PathLike)):
    return [os.fspath(values)]
  return [os.fspath(v) if isinstance(v, os.PathLike) else v for v in values]


@contextlib.contextmanager
def _gin_configuration(gin_files, gin_bindings):
  """gin's global configuration holding gin_files and gin_bindings alone
  (configurables.parse) for the block; cleared before and after it."""
  with configurables.isolated():
    configurables.parse(gin_files, gin_bindings)
    yield
