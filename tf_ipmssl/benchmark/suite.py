"""Builds each benchmark config from the library's own pieces and times it.

Everything timed is the code a training run executes: networks from tf_ipmssl.networks,
optimizers and run state from tf_ipmssl.training.run.Run.build, the compiled
step of the algorithm (`train_step` of semi_supervised / supervised), `evaluation.make_predict_fn`, the
SavedModel of `export.export_classifier` (and its ONNX and LiteRT exports, each in its own
runtime) and `pipelines.training_stream`. The data are random
uint8 images (no dataset is read) of the variant's image size, at which the networks are built
(build_ssl_data.image_size: docs/algorithm.md#networks).

Every function of every config (and a dense fp32 matmul, the machine's reference rate) is
built and warmed up first, then timed in rounds, each round calling each function once: the
samples of one round share the machine's load, which on a shared machine drifts within
minutes, so ratios between configs are taken under the same conditions.

Critic update vs generator update (timed as 'critic_step' and 'generator_step', a step as
'iteration_1', 'iteration_nc' or, supervised, 'iteration': report.Result): the generator
update is SemiSupervised's per-replica update, compiled on its own and timed directly; the
full step is its `train_step` with n_c = 1, timed right after it in each round; the critic
update is their paired difference (step − generator update: the step's other work —
iterator reads, the multiplier update, counters — is microseconds). The step at the
config's own n_c is n_c · T(n_c=1) − (n_c − 1) · T(generator update), or is timed directly
with `time_own_nc`.
"""
import contextlib
import dataclasses
import os
import tempfile
from typing import Callable, Optional

import keras
import numpy as np
import tensorflow as tf

from tf_ipmssl.benchmark import configs as configs_lib
from tf_ipmssl.benchmark import flops
from tf_ipmssl.benchmark import report
from tf_ipmssl.benchmark import timing
from tf_ipmssl.data import pipelines
from tf_ipmssl import errors
from tf_ipmssl.serving import export
from tf_ipmssl.serving import formats
from tf_ipmssl.serving import litert_export
from tf_ipmssl.serving import metadata
from tf_ipmssl.serving import onnx_export
from tf_ipmssl.serving import runtimes
from tf_ipmssl.training import evaluation
from tf_ipmssl.training import run as run_lib
from tf_ipmssl.training import run_config as run_config_lib

NUM_CLASSES = 10
CHANNELS = 3
# Synthetic training set: enough images that batches are gathered from a real-sized array.
NUM_SYNTHETIC_IMAGES = 4096
# Calls faster than this (export at batch 1, the input pipeline, the matmul) average several
# calls per sample.
FAST_SAMPLE_SECONDS = 0.5
# Batches of the eval config's split evaluations (split_error, split_confusion).
EVAL_BATCHES = 8


@dataclasses.dataclass(frozen=True)
class Options:
  """Sizes and repetition counts shared by every config (the bin/benchmark flags)."""
  width: float = 1.0
  batch_size: int = 64
  eval_batch_size: int = 256
  warmup: int = 1
  repeats: int = 3
  time_own_nc: bool = False
  seed: int = 0
  # The formats the export config times besides the SavedModel (those installed).
  export_formats: tuple = (formats.ONNX, formats.LITERT, formats.LITERT_INT8)


@contextlib.contextmanager
def dtype_policy(precision):
  """Builds Keras layers under the global dtype policy `precision` (as train.mixed_precision)."""
  previous = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(precision)
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(previous)


def image_shape(variant):
  """The synthetic images' (H, W, C): the variant's image size, colour."""
  return (variant.image_size, variant.image_size, CHANNELS)


def synthetic_data(seed=0, num_images=NUM_SYNTHETIC_IMAGES, image_size=32):
  """Random uint8 images [N, image_size, image_size, 3] and labels in [0, 10)."""
  rng = np.random.default_rng(seed)
  images = rng.integers(0, 256, size=(num_images, image_size, image_size, CHANNELS),
                        dtype=np.uint8)
  labels = rng.integers(0, NUM_CLASSES, size=num_images).astype(np.int32)
  return images, labels


def run_config(config, variant, options) -> run_config_lib.RunConfig:
  """The RunConfig of a benchmark config: its algorithm and settings (configs.py: for SSL
  K+1, λ_CE 1.5, the config's constraints and n_c) and learning rate, the variant's precision,
  XLA setting and image size, the options' batch, seed and critic width, the config's
  normalization. The eval and export configs time the critic alone: a supervised run's
  (no generator)."""
  training = config.kind in configs_lib.TRAINING_KINDS
  return run_config_lib.RunConfig.create(
      mode=config.kind if training else configs_lib.SUPERVISED, settings=config.settings, batch_size=options.batch_size,
      steps=1, seed=options.seed, critic_learning_rate=config.learning_rate,
      generator_learning_rate=config.learning_rate,
      jit_compile=variant.jit_compile,
      mixed_precision=None if variant.precision == 'float32' else variant.precision,
      critic={'normalization': config.normalization, 'width': options.width},
      data={'image_size': variant.image_size})


def build_networks(config, variant, options) -> run_lib.Run:
  """Networks, optimizers and run state as bin/train builds them (run.Run.build)."""
  keras.utils.set_random_seed(options.seed)
  with dtype_policy(variant.precision):
    return run_lib.Run.build(
        run_config(config, variant, options), num_classes=NUM_CLASSES,
        image_shape=image_shape(variant))


def build_algorithm(variant, run, **settings):
  """The run's algorithm (the class train.mode names, as bin/train makes it) on the default
  (single-device) strategy, with the variant's critic forward and the algorithm's settings
  changed by `settings` (ssl's critic_iterations)."""
  return run.config.algorithm(
      run, critic_forward=variant.forward,
      settings=dataclasses.replace(run.config.algorithm_settings, **settings))


def _streams(data, options):
  images, labels = data
  labeled = pipelines.training_stream(images, labels, batch_size=options.batch_size,
                                      seed=options.seed)
  unlabeled = pipelines.training_stream(images, batch_size=options.batch_size,
                                        seed=options.seed + 1)
  return iter(labeled), iter(unlabeled)


def _costs(run):
  """The critic's and the generator's costs (None for a run without a generator)."""
  return (flops.NetworkCost.of(flops.critic_costs(run.critic)),
          run.generator and flops.NetworkCost.of(flops.generator_costs(run.generator)))


def _both(value):
  return {flops.EXECUTED: value, flops.REQUIRED: value}


def _prepare_ssl(config, variant, options, data, stack):
  del stack
  run = build_networks(config, variant, options)
  n_c = config.critic_iterations
  b = options.batch_size
  algorithm_1 = build_algorithm(variant, run, critic_iterations=1)
  labeled, unlabeled = _streams(data, options)
  generator_update = tf.function(algorithm_1.generator_replica_update)
  # The real batch is read only by the feature-matching generator loss; the IPM loss ignores it.
  real_batch = tf.zeros([b, *image_shape(variant)])
  fns = {'generator_step': lambda: generator_update(run.state.counters['step'].read_value(),
                                                    real_batch),
         'iteration_1': lambda: algorithm_1.train_step(labeled, unlabeled)}
  if options.time_own_nc and n_c > 1:
    algorithm_n = build_algorithm(variant, run, critic_iterations=n_c)
    fns['iteration_nc'] = lambda: algorithm_n.train_step(labeled, unlabeled)
  critic_cost, generator_cost = _costs(run)
  batched = variant.forward == 'batched'
  constraints = config.constraints

  def finish(timings):
    t1, gen = timings['iteration_1'], timings['generator_step']
    timings['critic_step'] = timing.paired([t1, gen], [1, -1],
                                           derived='iteration(n_c=1) - generator step')
    if 'iteration_nc' not in timings:
      timings['iteration_nc'] = (t1 if n_c == 1 else timing.paired(
          [t1, gen], [n_c, -(n_c - 1)],
          derived=f'{n_c}·iteration(n_c=1) - {n_c - 1}·generator step'))
    counts = {
        'critic_step': flops.critic_update_flops(critic_cost, generator_cost, constraints, b,
                                                 batched),
        'generator_step': _both(flops.generator_update_flops(critic_cost, generator_cost, b)),
        'iteration_1': flops.ssl_step_flops(critic_cost, generator_cost, constraints, b, 1,
                                            batched),
        'iteration_nc': flops.ssl_step_flops(critic_cost, generator_cost, constraints, b, n_c,
                                             batched),
    }
    images = {'critic_step': b, 'generator_step': b, 'iteration_1': b,
              'iteration_nc': b * n_c}
    return timings, counts, images, n_c

  return fns, finish


def _prepare_supervised(config, variant, options, data, stack):
  del stack
  run = build_networks(config, variant, options)
  algorithm = build_algorithm(variant, run)
  labeled, _ = _streams(data, options)
  critic_cost, _ = _costs(run)
  count = _both(flops.supervised_step_flops(critic_cost, options.batch_size))
  return ({'iteration': lambda: algorithm.train_step(labeled)},
          lambda timings: (timings, {'iteration': count},
                           {'iteration': options.batch_size}, 1))


def _prepare_eval(config, variant, options, data, stack):
  del stack
  run = build_networks(config, variant, options)
  predict = evaluation.make_predict_fn(run.critic, jit_compile=variant.jit_compile)
  x = pipelines.to_model_input(data[0][:options.eval_batch_size])
  critic_cost, _ = _costs(run)
  count = _both(flops.forward_flops(critic_cost, len(x)))
  # A split's whole evaluation, EVAL_BATCHES batches, counted as the error alone
  # (evaluation.error_rate) and as the confusion matrix a run records
  # (evaluation.confusion_matrix): what the per-class bookkeeping costs, in the same rounds.
  images = data[0][:EVAL_BATCHES * options.eval_batch_size]
  labels = data[1][:len(images)]
  split = _both(flops.forward_flops(critic_cost, len(images)))
  return ({'forward': lambda: predict(x),
           'split_error': lambda: evaluation.error_rate(predict, images, labels,
                                                        options.eval_batch_size),
           'split_confusion': lambda: evaluation.confusion_matrix(
               predict, images, labels, NUM_CLASSES, options.eval_batch_size)},
          lambda timings: (timings, {'forward': count, 'split_error': split,
                                     'split_confusion': split},
                           {'forward': len(x), 'split_error': len(images),
                            'split_confusion': len(images)}, 1))


def _prepare_export(config, variant, options, data, stack):
  """The classifier exported in every format whose extra is installed (the SavedModel always;
  ONNX, LiteRT and LiteRT with int8 weights), each served by its own runtime
  (runtimes.py), at batch 1 and the eval batch: timings `batch_<n>` for the SavedModel,
  `<format>_batch_<n>` for the others; each export's model file size in file_bytes."""
  run = build_networks(config, variant, options)
  critic_cost, _ = _costs(run)
  directory = stack.enter_context(tempfile.TemporaryDirectory())
  base = os.path.join(directory, 'export')
  available = [formats.SAVED_MODEL]
  for name in options.export_formats:
    try:
      formats.check_available([name])
      available.append(name)
    except errors.UserError:
      pass  # Not installed: not timed (the report lists the formats it timed).
  file_bytes = {}
  for name in available:
    export_dir = formats.directory(base, name)
    arguments = (run.critic, image_shape(variant), export_dir, NUM_CLASSES, 'synthetic')
    if name == formats.SAVED_MODEL:
      export.export_classifier(*arguments)
    elif name == formats.ONNX:
      onnx_export.export_onnx(*arguments)
    else:
      litert_export.export_litert(*arguments, quantize=name == formats.LITERT_INT8)
    file_bytes[name] = _model_bytes(export_dir, name)
  fns, counts, images = {}, {}, {}
  for name in available:
    classifier = runtimes.open_classifier(formats.directory(base, name))
    prefix = '' if name == formats.SAVED_MODEL else f'{name}_'
    for size in dict.fromkeys((1, options.eval_batch_size)):
      batch = data[0][:size]
      key = f'{prefix}batch_{size}'
      fns[key] = lambda batch=batch, classifier=classifier: classifier(batch)
      counts[key] = _both(flops.forward_flops(critic_cost, size))
      images[key] = size
  return fns, lambda timings: (timings, counts, images, 1, file_bytes)


def _model_bytes(export_dir, name):
  """The bytes of an export's model: its model file, with a SavedModel's variables."""
  if name != formats.SAVED_MODEL:
    return os.path.getsize(os.path.join(export_dir, formats.FORMATS[name].model_file))
  return sum(os.path.getsize(os.path.join(root, f))
             for root, _, files in os.walk(export_dir) for f in files
             if f != metadata.METADATA_FILE)


def _prepare_pipeline(config, variant, options, data, stack):
  del config, variant, stack
  labeled, _ = _streams(data, options)
  return ({'batch': lambda: next(labeled)},
          lambda timings: (timings, {}, {'batch': options.batch_size}, 1))


_PREPARE = {
    configs_lib.SSL: _prepare_ssl,
    configs_lib.SUPERVISED: _prepare_supervised,
    configs_lib.EVAL: _prepare_eval,
    configs_lib.EXPORT: _prepare_export,
    configs_lib.PIPELINE: _prepare_pipeline,
}


def _result(config, variant, finished):
  timings, counts, images, n_c, *file_bytes = finished
  return report.Result(config=config.name, kind=config.kind, description=config.description,
                       variant=variant, critic_iterations=n_c, timings=timings, flops=counts,
                       images_per_call=images, file_bytes=file_bytes[0] if file_bytes else {})


def _key(config, variant, name):
  return f'{config.name} [{variant.label}] {name}'


def run(config_list, variant_list, options, *, matmul_size=2048,
        log: Optional[Callable[[str], None]] = None) -> report.BenchmarkRun:
  """Builds every (config, variant), then times them all, round after round.

  Each round calls every function once (the dense matmul reference among them), so the
  ratios between configs, and to the matmul rate, compare samples taken under the same
  machine load.
  """
  log = log or (lambda line: None)
  data_by_size = {}
  load_start = os.getloadavg()
  log(f'load average at start: {report.format_load(load_start)}')
  with contextlib.ExitStack() as stack:
    prepared = []
    for config in config_list:
      for variant in configs_lib.variants_for(config, variant_list):
        log(f'building {config.name} [{variant.label}]')
        if variant.image_size not in data_by_size:
          data_by_size[variant.image_size] = synthetic_data(options.seed,
                                                            image_size=variant.image_size)
        fns, finish = _PREPARE[config.kind](config, variant, options,
                                            data_by_size[variant.image_size], stack)
        prepared.append((config, variant, fns, finish))
    everything = {'matmul': timing.matmul_function(matmul_size)}
    for config, variant, fns, _ in prepared:
      everything.update({_key(config, variant, name): fn for name, fn in fns.items()})
    timings = timing.measure_interleaved(everything, warmup=options.warmup,
                                         repeats=options.repeats,
                                         min_sample_seconds=FAST_SAMPLE_SECONDS, log=log)
  results = []
  for config, variant, fns, finish in prepared:
    own = {name: timings[_key(config, variant, name)] for name in fns}
    results.append(_result(config, variant, finish(own)))
    log(f'{config.name} [{variant.label}]: {report.format_result_line(results[-1])}')
  load_end = os.getloadavg()
  log(f'load average at end: {report.format_load(load_end)}')
  machine = dict(report.machine_info(), load_average_start=list(load_start),
                 load_average_end=list(load_end))
  return report.BenchmarkRun(
      settings=dict(dataclasses.asdict(options), matmul_size=matmul_size,
                    variants=[v.label for v in variant_list],
                    configs=[c.name for c in config_list]),
      machine=machine, matmul={'size': matmul_size, 'timing': timings['matmul']},
      results=results)
