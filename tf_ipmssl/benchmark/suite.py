"""Builds each benchmark config from the library's own pieces and times it.

Everything timed is the code a training run executes: networks from tf_ipmssl.networks,
optimizers and run state as tf_ipmssl.training.trainer makes them, the compiled
`TrainingSteps.ssl_iteration` / `supervised_iteration`, `evaluation.make_predict_fn`, the
SavedModel of `export.export_classifier` and `pipelines.training_stream`. The data are random
uint8 images (no dataset is read).

Critic step vs generator step: the generator step is the per-replica step of TrainingSteps,
compiled on its own and timed directly; the full iteration is `ssl_iteration` with n_c = 1.
Both are timed alternately in every repeat, and the critic step is their paired difference
(iteration − generator step: the iteration's other work — iterator reads, the multiplier
update, counters — is microseconds). The iteration at the config's own n_c is
n_c · T(n_c=1) − (n_c − 1) · T(generator step), or is timed directly with `time_own_nc`.
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
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.training import evaluation
from tf_ipmssl.training import export
from tf_ipmssl.training import steps as steps_lib
from tf_ipmssl.training import trainer

NUM_CLASSES = 10
IMAGE_SHAPE = (32, 32, 3)
# Synthetic training set: enough images that batches are gathered from a real-sized array.
NUM_SYNTHETIC_IMAGES = 4096
# Fast calls (export at batch 1, the input pipeline) average several calls per sample.
FAST_SAMPLE_SECONDS = 0.5


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


class SeparatePassesCritic:
  """A critic that makes the critic objective run one forward pass per batch.

  critic_objective stacks the labeled, real, generated (and interpolated) batches into one
  critic call unless the critic has batch norm; this proxy reports `has_batch_norm` so the
  objective takes its separate-pass path, and delegates everything else to the critic.
  """
  has_batch_norm = True

  def __init__(self, critic):
    self._critic = critic

  def __getattr__(self, name):
    return getattr(self._critic, name)

  def __call__(self, *args, **kwargs):
    return self._critic(*args, **kwargs)


@contextlib.contextmanager
def dtype_policy(precision):
  """Builds Keras layers under the global dtype policy `precision` (as train.mixed_precision)."""
  previous = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(precision)
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(previous)


def synthetic_data(seed=0, num_images=NUM_SYNTHETIC_IMAGES):
  """Random uint8 images [N, 32, 32, 3] and labels in [0, 10)."""
  rng = np.random.default_rng(seed)
  images = rng.integers(0, 256, size=(num_images, *IMAGE_SHAPE), dtype=np.uint8)
  labels = rng.integers(0, NUM_CLASSES, size=num_images).astype(np.int32)
  return images, labels


@dataclasses.dataclass
class _Networks:
  critic: keras.Model
  generator: keras.Model
  critic_optimizer: keras.optimizers.Optimizer
  generator_optimizer: keras.optimizers.Optimizer
  state: object
  loss_scaling: bool


def _build_networks(config, variant, options) -> _Networks:
  """Networks, optimizers and run state as trainer.train builds them."""
  keras.utils.set_random_seed(options.seed)
  with dtype_policy(variant.precision):
    critic = critic_lib.build_critic(num_classes=NUM_CLASSES, input_channels=IMAGE_SHAPE[-1],
                                     normalization=config.normalization, width=options.width,
                                     seed=options.seed)
    generator = generator_lib.build_generator(output_channels=IMAGE_SHAPE[-1],
                                              seed=options.seed)
    # pylint: disable=protected-access  (the trainer's own optimizer and state factories)
    critic_optimizer = trainer._make_optimizer('adam', config.learning_rate, 0.5, 0.999)
    generator_optimizer = trainer._make_optimizer('adam', config.learning_rate, 0.5, 0.999)
    loss_scaling = variant.precision == 'mixed_float16'
    if loss_scaling:
      critic_optimizer = keras.optimizers.LossScaleOptimizer(critic_optimizer)
      generator_optimizer = keras.optimizers.LossScaleOptimizer(generator_optimizer)
    critic_optimizer.build(critic.trainable_variables)
    generator_optimizer.build(generator.trainable_variables)
    state = trainer._RunState(config.constraints)
    # pylint: enable=protected-access
  return _Networks(critic, generator, critic_optimizer, generator_optimizer, state, loss_scaling)


def _training_steps(config, variant, options, nets, critic_iterations):
  critic = nets.critic
  if variant.forward == 'separate':
    critic = SeparatePassesCritic(critic)
  return steps_lib.TrainingSteps(
      strategy=tf.distribute.get_strategy(), critic=critic, generator=nets.generator,
      critic_optimizer=nets.critic_optimizer, generator_optimizer=nets.generator_optimizer,
      multipliers=nets.state.multipliers, counters=nets.state.counters,
      formulation='kplus1', constraints=config.constraints, lambda_ce=1.5,
      global_batch_size=options.batch_size, critic_iterations=critic_iterations,
      noise_dim=nets.generator.noise_dim, seed=options.seed,
      jit_compile=variant.jit_compile, loss_scaling=nets.loss_scaling)


def _streams(data, options):
  images, labels = data
  labeled = pipelines.training_stream(images, labels, batch_size=options.batch_size,
                                      seed=options.seed)
  unlabeled = pipelines.training_stream(images, batch_size=options.batch_size,
                                        seed=options.seed + 1)
  return iter(labeled), iter(unlabeled)


def _costs(nets):
  return (flops.NetworkCost.of(flops.critic_costs(nets.critic)),
          flops.NetworkCost.of(flops.generator_costs(nets.generator)))


def _both(value):
  return {flops.EXECUTED: value, flops.REQUIRED: value}


def _measure_ssl(config, variant, options, data):
  nets = _build_networks(config, variant, options)
  n_c = config.critic_iterations
  b = options.batch_size
  steps_1 = _training_steps(config, variant, options, nets, critic_iterations=1)
  labeled, unlabeled = _streams(data, options)
  # pylint: disable-next=protected-access  (TrainingSteps' own per-replica generator step)
  generator_step = tf.function(steps_1._generator_replica_step)
  fns = {'generator_step': lambda: generator_step(nets.state.counters['step'].read_value()),
         'iteration_1': lambda: steps_1.ssl_iteration(labeled, unlabeled)}
  if options.time_own_nc and n_c > 1:
    steps_n = _training_steps(config, variant, options, nets, critic_iterations=n_c)
    fns['iteration_nc'] = lambda: steps_n.ssl_iteration(labeled, unlabeled)
  timings = timing.measure_interleaved(fns, warmup=options.warmup, repeats=options.repeats)
  t1, gen = timings['iteration_1'], timings['generator_step']
  timings['critic_step'] = timing.paired([t1, gen], [1, -1],
                                         derived='iteration(n_c=1) - generator step')
  if 'iteration_nc' not in timings:
    timings['iteration_nc'] = (t1 if n_c == 1 else timing.paired(
        [t1, gen], [n_c, -(n_c - 1)],
        derived=f'{n_c}·iteration(n_c=1) - {n_c - 1}·generator step'))

  critic_cost, generator_cost = _costs(nets)
  batched = variant.forward == 'batched'
  constraints = config.constraints
  counts = {
      'critic_step': flops.critic_step_flops(critic_cost, generator_cost, constraints, b,
                                             batched),
      'generator_step': _both(flops.generator_step_flops(critic_cost, generator_cost, b)),
      'iteration_1': flops.ssl_iteration_flops(critic_cost, generator_cost, constraints, b, 1,
                                               batched),
      'iteration_nc': flops.ssl_iteration_flops(critic_cost, generator_cost, constraints, b,
                                                n_c, batched),
  }
  images = {'critic_step': b, 'generator_step': b, 'iteration_1': b, 'iteration_nc': b * n_c}
  return timings, counts, images, n_c


def _measure_supervised(config, variant, options, data):
  nets = _build_networks(config, variant, options)
  steps = _training_steps(config, variant, options, nets, critic_iterations=1)
  labeled, _ = _streams(data, options)
  timings = {'iteration': timing.measure(lambda: steps.supervised_iteration(labeled),
                                         warmup=options.warmup, repeats=options.repeats)}
  critic_cost, _ = _costs(nets)
  counts = {'iteration': _both(flops.supervised_step_flops(critic_cost, options.batch_size))}
  return timings, counts, {'iteration': options.batch_size}, 1


def _measure_eval(config, variant, options, data):
  nets = _build_networks(config, variant, options)
  predict = evaluation.make_predict_fn(nets.critic, jit_compile=variant.jit_compile)
  x = pipelines.to_model_input(data[0][:options.eval_batch_size])
  timings = {'forward': timing.measure(lambda: predict(x), warmup=options.warmup,
                                       repeats=options.repeats)}
  critic_cost, _ = _costs(nets)
  counts = {'forward': _both(flops.forward_flops(critic_cost, len(x)))}
  return timings, counts, {'forward': len(x)}, 1


def _measure_export(config, variant, options, data):
  nets = _build_networks(config, variant, options)
  critic_cost, _ = _costs(nets)
  timings, counts, images = {}, {}, {}
  with tempfile.TemporaryDirectory() as directory:
    export_dir = export.export_classifier(nets.critic, IMAGE_SHAPE,
                                          os.path.join(directory, 'export'), NUM_CLASSES,
                                          'synthetic')
    classifier = export.LoadedClassifier(export_dir)
    fns = {}
    for size in dict.fromkeys((1, options.eval_batch_size)):
      batch = data[0][:size]
      fns[f'batch_{size}'] = lambda batch=batch: classifier(batch)
      counts[f'batch_{size}'] = _both(flops.forward_flops(critic_cost, size))
      images[f'batch_{size}'] = size
    timings = timing.measure_interleaved(fns, warmup=options.warmup, repeats=options.repeats,
                                         min_sample_seconds=FAST_SAMPLE_SECONDS)
  return timings, counts, images, 1


def _measure_pipeline(config, variant, options, data):
  del config, variant
  labeled, _ = _streams(data, options)
  timings = {'batch': timing.measure(lambda: next(labeled), warmup=options.warmup,
                                     repeats=options.repeats,
                                     min_sample_seconds=FAST_SAMPLE_SECONDS)}
  return timings, {}, {'batch': options.batch_size}, 1


_MEASURE = {
    configs_lib.SSL: _measure_ssl,
    configs_lib.SUPERVISED: _measure_supervised,
    configs_lib.EVAL: _measure_eval,
    configs_lib.EXPORT: _measure_export,
    configs_lib.PIPELINE: _measure_pipeline,
}


def measure_config(config, variant, options, data=None) -> report.Result:
  """Builds `config` under `variant` and times it; returns its Result."""
  data = synthetic_data(options.seed) if data is None else data
  timings, counts, images, n_c = _MEASURE[config.kind](config, variant, options, data)
  return report.Result(config=config.name, kind=config.kind, description=config.description,
                       variant=variant, critic_iterations=n_c, timings=timings, flops=counts,
                       images_per_call=images)


def measure_matmul(size, warmup, repeats) -> timing.Timing:
  """Seconds per dense fp32 [size, size] @ [size, size] matmul through TensorFlow."""
  return timing.measure(timing.matmul_function(size), warmup=warmup, repeats=repeats)


def run(config_list, variant_list, options, *, matmul_size=2048,
        log: Optional[Callable[[str], None]] = None) -> report.BenchmarkRun:
  """Measures every (config, variant); the matmul reference is timed first and last."""
  log = log or (lambda line: None)
  data = synthetic_data(options.seed)
  matmul_repeats = max(options.repeats, 3)
  load_start = os.getloadavg()
  log(f'load average at start: {report.format_load(load_start)}')
  matmul_start = measure_matmul(matmul_size, warmup=1, repeats=matmul_repeats)
  matmul_flops = flops.matmul_flops(matmul_size, matmul_size, matmul_size)
  log(f'matmul {matmul_size}: {report.gflops(matmul_flops, matmul_start):.1f} GFLOP/s')
  results = []
  for config in config_list:
    for variant in configs_lib.variants_for(config, variant_list):
      log(f'measuring {config.name} [{variant.label}] ...')
      result = measure_config(config, variant, options, data)
      log('  ' + report.format_result_line(result))
      results.append(result)
  matmul_end = measure_matmul(matmul_size, warmup=1, repeats=matmul_repeats)
  log(f'matmul {matmul_size}: {report.gflops(matmul_flops, matmul_end):.1f} GFLOP/s')
  load_end = os.getloadavg()
  log(f'load average at end: {report.format_load(load_end)}')
  machine = dict(report.machine_info(), load_average_start=list(load_start),
                 load_average_end=list(load_end))
  return report.BenchmarkRun(
      settings=dict(dataclasses.asdict(options), matmul_size=matmul_size,
                    variants=[v.label for v in variant_list],
                    configs=[c.name for c in config_list]),
      machine=machine, matmul={'size': matmul_size, 'start': matmul_start, 'end': matmul_end},
      results=results)
