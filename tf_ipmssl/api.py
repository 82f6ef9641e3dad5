"""The Python API: train a run, evaluate it, export its classifier, load it, predict with it.

  import tf_ipmssl
  result = tf_ipmssl.train('runs/x', ['gin/quickstart.gin'], ['train.steps = 100'])
  tf_ipmssl.evaluate('runs/x').error                              # percent, best checkpoint
  tf_ipmssl.predict(result.export_dir, images).label_names

  config = tf_ipmssl.configuration('gin/quickstart.gin').replaced({'train.steps': 100})
  tf_ipmssl.train('runs/y', config=config)                         # the same, from an object

Each function does what its program does, with the program's defaults: `train` is
bin/train, `evaluate` bin/evaluate, `export` bin/export, `predict` bin/predict (numpy
images, or image files and folders); `load` is the run that bin/evaluate and bin/export
restore, by default the best checkpoint's, as all of them. The programs parse their flags and
call these. `train` prints what bin/train prints (progress lines, the final line) and writes
the same run directory; the others print nothing.

A mistake of the caller's (a bad gin file or binding, a missing run, a checkpoint that is not
there) raises the library's errors.UserError — errors.ConfigError for a configuration — with
the message the program prints after `error: `, before the model dir is created or changed;
nothing here exits the process.

The process as it was found. `configuration` and `train` read their gin files and bindings
alone, as a fresh bin/train process does: gin's configuration is emptied for the call and
put back afterwards (configurables.isolated), so one call never sees another's bindings nor
any the caller parsed, and the caller's are there again after it. Every call puts back
Keras's dtype policy, Grappler's options and Python's and NumPy's random states
(process_state.py); what stays set is in `train`'s docstring. The programs' TensorFlow
environment (command_line.TENSORFLOW_DEFAULTS: oneDNN kernels on) is theirs: importing this
module sets no environment variable, so a notebook computes with TensorFlow's own defaults
unless it sets TF_ENABLE_ONEDNN_OPTS=1 before importing TensorFlow (a run records the
setting in its versions.json).
"""
import contextlib
import dataclasses
import os
import shlex
import sys
from typing import Optional, Sequence, Union

import keras
import numpy as np

from tf_ipmssl import api_results
from tf_ipmssl import configurables
from tf_ipmssl import errors
from tf_ipmssl import process_state
from tf_ipmssl.data import ssl_data
from tf_ipmssl.run_dir import class_results
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.run_dir import run_lock
from tf_ipmssl.serving import export as export_lib
from tf_ipmssl.serving import foreign_score
from tf_ipmssl.serving import formats as formats_lib
from tf_ipmssl.serving import metadata as metadata_lib
from tf_ipmssl.serving import prediction
from tf_ipmssl.serving import runtimes
from tf_ipmssl.serving import score_graph
from tf_ipmssl.training import evaluation
from tf_ipmssl.training import precision
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config
from tf_ipmssl.training import stop_request
from tf_ipmssl.training import trainer

SPLITS = ('test', 'validation', 'labeled')
# The class bin/predict --reject prints for an image past its score's threshold.
NONE_OF_THESE = 'none of these'
PathLike = api_results.PathLike


# What the functions return (api_results.py), by this module's names too.
TrainResult = api_results.TrainResult
Evaluation = api_results.Evaluation
ExportedClassifier = api_results.ExportedClassifier
Predictions = api_results.Predictions


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
    data = self.data()
    images, labels = _split(data, split)
    with process_state.preserved():
      precision.fix_summation_order()  # The graphs of training's evaluations (precision.py).
      confusion = evaluation.confusion_matrix(evaluation.make_predict_fn(self.critic), images,
                                              labels, data.num_classes, batch_size)
    return Evaluation.of(self.checkpoint, split, confusion, data.class_names)


def configuration(gin_files: Union[PathLike, Sequence[PathLike]] = (),
                  gin_bindings: Union[str, Sequence[str]] = ()) -> run_config.RunConfig:
  """The validated configuration of gin files and bindings, as bin/train reads it before it
  touches the model dir (configurables.run_config), parsed alone (the module doc).

  Args:
    gin_files: gin files, parsed in order (one path: one file); their `include`s are found
      in the working directory, the checkout's gin/ and each file's gin/ root.
    gin_bindings: gin bindings applied after them, e.g. 'train.steps = 100' (a string: one).

  Returns:
    The RunConfig: `config.train.steps`, `config.build_critic.width`, the algorithm's
    `config.algorithm_settings`; `config.replaced({'train.steps': 100})` is another one.

  Raises:
    errors.ConfigError: a gin file that does not exist, a binding gin cannot parse or that
      the configuration refuses.
  """
  with process_state.preserved(), _gin_configuration(_as_list(gin_files),
                                                     _as_list(gin_bindings)):
    try:
      return configurables.run_config()
    except errors.UserError as e:
      raise errors.without_gin_context(e) from None


def train(model_dir: PathLike, gin_files: Union[PathLike, Sequence[PathLike]] = (),
          gin_bindings: Union[str, Sequence[str]] = (), *,
          config: Optional[run_config.RunConfig] = None,
          started: Optional[float] = None) -> TrainResult:
  """Trains (or resumes) the run in model_dir, as `bin/train --model_dir=MODEL_DIR
  --gin_file=... --gin_bindings=...` does (README, "Training").

  Args:
    model_dir: the run directory. An existing one resumes from its latest checkpoint (its
      configuration must be the same); a finished one only reports.
    gin_files, gin_bindings: the configuration, as `configuration` reads them.
    config: or the configuration itself (a RunConfig: `configuration(...)`, `.replaced(...)`,
      RunConfig.create), instead of gin files and bindings. The run records it as gin too
      (config.gin and operative_config.gin: configurables.gin_text, which parses back to it).
    started: time.time() at the start of the session whose wall time the run records
      (metrics.json's wall_seconds and wall_split); default: now. bin/train passes its
      process's start.

  What stays set after the call (the module doc): TensorFlow's and Keras's global seeds, at
  train.seed (keras.utils.set_random_seed; no public API reads the earlier ones back), and,
  for a run with `train.deterministic_ops = True`, TensorFlow's op determinism and, where
  the runtime had not started yet, one thread per op, which TensorFlow cannot undo. Train
  such runs in a process of their own (bin/train) where later work should run at full
  speed.

  Returns:
    The run's TrainResult.

  Raises:
    errors.ConfigError: a gin file that does not exist, a binding gin cannot parse or that
      the run's configuration refuses, a config besides gin files or bindings; raised before
      the model dir is created or changed.
    errors.UserError: any other mistake bin/train reports in one line (a missing dataset, a
      model dir of another configuration or held by another trainer, ...).
  """
  model_dir = os.fspath(model_dir)
  if config is None:
    config = configuration(gin_files, gin_bindings)  # Before the model dir is touched.
  elif _as_list(gin_files) or _as_list(gin_bindings):
    raise errors.ConfigError('train takes a configuration object or gin files and bindings, '
                             'not both: apply the bindings with config.replaced({...})')
  elif not isinstance(config, run_config.RunConfig):
    raise errors.ConfigError(f'config must be a RunConfig (tf_ipmssl.configuration(...)), '
                             f'got {type(config).__name__}')
  else:
    text = configurables.gin_text(config)
    config = dataclasses.replace(config, gin_text=text, operative_gin_text=text)
  # SIGTERM from here on stops the run in one line and releases the lock (stop_request.py).
  with process_state.preserved(), stop_request.on_sigterm(), run_lock.hold(model_dir):
    metrics = trainer.train(model_dir, config, started=started)
  return TrainResult.of(model_dir, metrics)


def load(model_dir: PathLike, checkpoint: str = run_lib.REPORTED,
         weights: str = 'evaluated') -> LoadedRun:
  """The run in model_dir with the critic of one checkpoint restored, as bin/evaluate and
  bin/export restore it.

  Args:
    model_dir: a run directory written by `train` (or bin/train).
    checkpoint: 'reported' (the one the run reports and exports: best where it has a
      validation split, else latest), 'best' (the best validation step's) or 'latest'.
    weights: 'evaluated' (the critic the run evaluates: its weight average under
      train.critic_ema_decay) or 'trained' (the critic itself; latest checkpoint only when
      the run keeps a weight average).
  """
  model_dir = os.fspath(model_dir)
  with process_state.preserved():
    run = run_lib.Run.from_model_dir(model_dir)
    critic, path = run.restore_critic(checkpoint, weights)
  return LoadedRun(model_dir, run, critic, path)


def evaluate(model_dir: PathLike, checkpoint: str = run_lib.REPORTED,
             weights: str = 'evaluated',
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
  with process_state.preserved():
    return _evaluate_export(os.fspath(model_dir), os.fspath(export_dir), split, batch_size)


def _evaluate_export(model_dir, export_dir, split, batch_size):
  """`evaluate` of an exported classifier."""
  config = run_lib.run_config_of(model_dir)
  classifier = runtimes.open_classifier(export_dir)
  data = ssl_data.build_ssl_data(config.build_ssl_data)
  images, labels = _split(data, split)
  predicted = np.concatenate([classifier(images[i:i + batch_size])['labels']
                              for i in range(0, len(images), batch_size)])
  return Evaluation.of(export_dir, split,
                       class_results.confusion_matrix(labels, predicted, data.num_classes),
                       data.class_names)


def export(model_dir: PathLike, export_dir: Optional[PathLike] = None,
           checkpoint: str = run_lib.REPORTED,
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
    checkpoint: 'reported' (the run's own choice), 'best' or 'latest' (see `load`).
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
  if checkpoint == run_lib.REPORTED and not export_dir:
    checkpoint = run_lib.reported_checkpoint(model_dir)  # Names the default directory.
  base = os.fspath(export_dir) if export_dir else os.path.join(model_dir,
                                                               f'export_{checkpoint}')
  directories = {name: formats_lib.directory(base, name) for name in names}
  for directory in directories.values():
    export_lib.check_export_dir(directory)
  with process_state.preserved():
    loaded = load(model_dir, checkpoint)
    precision.fix_summation_order()  # As in the run that trained it (precision.py).
    return _export(loaded, directories, names)


def _export(loaded, directories, names):
  """Writes loaded.critic in each format of `names` to its directory, with the "none of these
  classes" scores' thresholds fixed on the run's known images (score_graph.fit)."""
  dataset = loaded.dataset
  scoring = score_graph.fit(loaded.critic, loaded.config.formulation, loaded.data())
  arguments = (dataset['num_classes'], dataset['name'], dataset['class_names'],
               dataset['resize'])
  options = {'scoring': scoring, 'summary': _run_summary(loaded)}
  for name, directory in directories.items():
    if name == formats_lib.SAVED_MODEL:
      export_lib.export_classifier(loaded.critic, dataset['image_shape'], directory,
                                   *arguments, **options)
    elif name == formats_lib.ONNX:
      from tf_ipmssl.serving import onnx_export  # pylint: disable=g-import-not-at-top
      onnx_export.export_onnx(loaded.critic, dataset['image_shape'], directory, *arguments,
                              **options)
    else:
      from tf_ipmssl.serving import litert_export  # pylint: disable=g-import-not-at-top
      litert_export.export_litert(loaded.critic, dataset['image_shape'], directory,
                                  *arguments, quantize=name == formats_lib.LITERT_INT8,
                                  **options)
  return ExportedClassifier(directories[names[0]], loaded.checkpoint, directories)


def _run_summary(loaded) -> dict:
  """The model card's summary of a loaded run (serving/model_card.py)."""
  versions = run_files.read_json(loaded.model_dir, run_files.VERSIONS_FILE) or {}
  command = versions.get('command')
  best_dir = os.path.join(loaded.model_dir, run_files.BEST_CHECKPOINT_DIR)
  return {'metrics': loaded.metrics,
          'checkpoint': ('best' if os.path.dirname(loaded.checkpoint) == best_dir
                         else 'latest'),
          'counts': loaded.dataset.get('counts'), 'source': loaded.dataset.get('source'),
          'trained_by': shlex.join(command) if isinstance(command, list) else command,
          'exported_by': shlex.join(sys.argv)}


def predict(export_dir: PathLike, images, score: Optional[str] = None) -> Predictions:
  """Classifies images with an exported classifier (a run's export/ folder, or bin/export's
  of any format), as bin/predict does; needs only the export, served by its own runtime
  (runtimes.py: TensorFlow, onnxruntime or LiteRT).

  Args:
    export_dir: the exported classifier (a SavedModel, ONNX or LiteRT export directory).
    images: uint8 images [N, H, W, C] (a numpy array or anything np.asarray takes) in the
      size the export takes (the dataset's native size, 28x28x1 for Fashion-MNIST; an image
      folder's export: any one size); or image files and folders (a path or a list of paths;
      folders are searched at any depth), decoded as bin/predict decodes them.
    score: the "none of these classes" score that `Predictions.score` and `none_of_these`
      apply, one of the export's (serving/foreign_score.py); None: the export's default.

  Returns:
    Predictions, one row per image; a file that cannot be classified is listed in `skipped`
    with the reason, and the others are classified.

  Raises:
    errors.UserError: a `score` the export does not have (or any, for an export written
      before the scores).
  """
  export_dir = os.fspath(export_dir)
  if isinstance(images, (str, os.PathLike)):
    images = [images]
  rule = foreign_score.rule_of(metadata_lib.read(export_dir), score)
  with process_state.preserved():
    if isinstance(images, (list, tuple)) and all(
        isinstance(i, (str, os.PathLike)) for i in images):
      predictions = _predict_files(export_dir, [os.fspath(i) for i in images])
    else:
      predictions = _predict_arrays(export_dir, np.asarray(images))
  if rule is None or predictions.scores is None:
    return dataclasses.replace(predictions, scores=None)
  return dataclasses.replace(predictions, rule=rule)


def _predict_files(export_dir, paths):
  predictor = prediction.Predictor(export_dir)
  answers = list(predictor.predict(prediction.image_paths(paths)))
  classified = [p for p in answers if p.problem is None]
  probabilities = (np.stack([p.probabilities for p in classified]) if classified
                   else np.zeros([0, len(predictor.class_names)], np.float32))
  scores = None
  if predictor.score_names:
    scores = (np.stack([p.scores for p in classified]) if classified
              else np.zeros([0, len(predictor.score_names)], np.float32))
  return Predictions(
      labels=np.argmax(probabilities, axis=-1).astype(np.int32), probabilities=probabilities,
      class_names=predictor.class_names, paths=tuple(p.path for p in classified),
      skipped=tuple((p.path, p.problem) for p in answers if p.problem is not None),
      scores=scores)


def _predict_arrays(export_dir, images):
  """Through the export's runtime in bin/predict's batches (runtimes.Classifier checks the
  dtype and shape)."""
  classifier = runtimes.open_classifier(export_dir)
  images = classifier.check(images)  # The UserError that names the shape it takes.
  outputs = [classifier(images[i:i + prediction.BATCH])
             for i in range(0, max(len(images), 1), prediction.BATCH)]
  return Predictions(labels=np.concatenate([o['labels'] for o in outputs]),
                     probabilities=np.concatenate([o['probabilities'] for o in outputs]),
                     class_names=tuple(classifier.class_names),
                     scores=(np.concatenate([o['scores'] for o in outputs])
                             if classifier.score_names else None))


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
  """gin's configuration holding gin_files and gin_bindings alone (configurables.parse) for
  the block, the process's put back after it (configurables.isolated)."""
  with configurables.isolated():
    configurables.parse(gin_files, gin_bindings)
    yield
