"""The configurations bin/benchmark measures, and the variants it crosses them with.

Training configs use the paper's settings (Appendix B): K+1 formulation, batch 64, Adam, and
their own n_c. Learning rates do not change the speed; they are kept for fidelity. This
module does not import TensorFlow, so that bin/benchmark rejects a bad flag at once.
"""
import dataclasses

from tf_ipmssl import errors
from tf_ipmssl.data import dataset_specs

# What a config measures.
SSL, SUPERVISED, EVAL, EXPORT, PIPELINE = 'ssl', 'supervised', 'eval', 'export', 'pipeline'
TRAINING_KINDS = (SSL, SUPERVISED)

PRECISIONS = ('float32', 'mixed_bfloat16', 'mixed_float16')
FORWARDS = ('batched', 'separate')


@dataclasses.dataclass(frozen=True)
class BenchmarkConfig:
  """One row group of the benchmark.

  Attributes:
    name: the --configs name.
    kind: SSL, SUPERVISED, EVAL, EXPORT or PIPELINE.
    description: the paper's name for it.
    normalization: critic normalization (docs/algorithm.md#critic-normalization).
    constraint_specs: (kind, component) of each SSL constraint, kind in 'fisher', 'sobolev',
      'gp'; built with the library's defaults (ρ, λ_GP) by `constraints`.
    critic_iterations: the config's own n_c (Appendix B).
    learning_rate: Adam learning rate of critic and generator.
  """
  name: str
  kind: str
  description: str
  normalization: str = 'none'
  constraint_specs: tuple = ()
  critic_iterations: int = 1
  learning_rate: float = 2e-4

  @property
  def settings(self) -> dict:
    """The settings of the algorithm a training config runs (train.mode = its kind): for
    SSL the paper's K+1 objective with λ_CE 1.5, its constraints and n_c; none for
    SUPERVISED."""
    if self.kind != SSL:
      return {}
    return dict(formulation='kplus1', constraints=self.constraints, lambda_ce=1.5,
                critic_iterations=self.critic_iterations)

  @property
  def constraints(self):
    """The Constraint objects of the objective (docs/algorithm.md#constraints)."""
    # pylint: disable=g-import-not-at-top  (TensorFlow loads only when a config is built)
    from tf_ipmssl.objectives import fisher
    from tf_ipmssl.objectives import gradient_penalty
    from tf_ipmssl.objectives import sobolev
    kinds = {'fisher': fisher.Fisher, 'sobolev': sobolev.Sobolev,
             'gp': gradient_penalty.GradientPenalty}
    return tuple(kinds[kind](component=component)
                 for kind, component in self.constraint_specs)


CONFIGS = {c.name: c for c in (
    BenchmarkConfig('fisher', SSL, 'K+1 Fisher(f), no norm',
                    constraint_specs=(('fisher', 'f'),), critic_iterations=2),
    BenchmarkConfig('fisher_sobolev', SSL, 'K+1 Fisher(f) + Sobolev(f-), no norm',
                    constraint_specs=(('fisher', 'f'), ('sobolev', 'f_neg')),
                    critic_iterations=2),
    BenchmarkConfig('gp', SSL, 'K+1 WGAN-GP(f-), no norm',
                    constraint_specs=(('gp', 'f_neg'),), critic_iterations=5,
                    learning_rate=1e-4),
    BenchmarkConfig('fisher_ln', SSL, 'K+1 Fisher(f), LN singleton/per-channel',
                    normalization='layer_norm_singleton_per_channel',
                    constraint_specs=(('fisher', 'f'),), critic_iterations=2),
    BenchmarkConfig('supervised', SUPERVISED, 'supervised only (CE on the labeled batch)'),
    BenchmarkConfig('eval', EVAL, 'eval forward (argmax S(Φ(x)), dropout off)'),
    BenchmarkConfig('export', EXPORT, 'exported SavedModel classifier (uint8 in)'),
    BenchmarkConfig('pipeline', PIPELINE, 'input pipeline (labeled training stream)'),
)}
DEFAULT_CONFIGS = tuple(CONFIGS)


@dataclasses.dataclass(frozen=True)
class Variant:
  """How a config is compiled and run: XLA, dtype policy, batched or separate critic passes,
  and the networks' input size (build_ssl_data.image_size; the synthetic images' size)."""
  jit_compile: bool = False
  precision: str = 'float32'
  forward: str = 'batched'
  image_size: int = dataset_specs.DEFAULT_IMAGE_SIZE

  @property
  def label(self):
    """'float32/noxla/batched'; another image size than the paper's 32 is appended:
    'float32/noxla/batched/64px'."""
    parts = [self.precision.replace('mixed_', ''), 'xla' if self.jit_compile else 'noxla',
             self.forward]
    if self.image_size != dataset_specs.DEFAULT_IMAGE_SIZE:
      parts.append(f'{self.image_size}px')
    return '/'.join(parts)


def select_configs(names):
  """The BenchmarkConfigs named in `names`, in the given order."""
  unknown = [n for n in names if n not in CONFIGS]
  if unknown:
    raise errors.ConfigError(f'unknown benchmark config(s) {unknown}; choose from '
                             f'{list(CONFIGS)}')
  if not names:
    raise errors.ConfigError(f'--configs is empty; choose from {list(CONFIGS)}')
  return [CONFIGS[n] for n in dict.fromkeys(names)]


def variants(jit_compile, precisions, forwards, image_sizes=(dataset_specs.DEFAULT_IMAGE_SIZE,)):
  """The variants to run: image_sizes × jit_compile in {'off', 'on', 'both'} × precisions ×
  forwards."""
  jit = {'off': (False,), 'on': (True,), 'both': (False, True)}
  if jit_compile not in jit:
    raise errors.ConfigError(f"--jit_compile={jit_compile!r}: use 'off', 'on' or 'both'")
  for precision in precisions:
    if precision not in PRECISIONS:
      raise errors.ConfigError(f'--mixed_precision: unknown policy {precision!r}; use one '
                               f'of {list(PRECISIONS)}')
  for forward in forwards:
    if forward not in FORWARDS:
      raise errors.ConfigError(f'--forward: unknown mode {forward!r}; use one of '
                               f'{list(FORWARDS)}')
  if not image_sizes:
    raise errors.ConfigError(f'--image_sizes is empty; choose from '
                             f'{list(dataset_specs.IMAGE_SIZES)}')
  for size in image_sizes:
    dataset_specs.check_image_size('--image_sizes', size)
  return [Variant(j, p, f, s) for s in dict.fromkeys(image_sizes)
          for p in dict.fromkeys(precisions) for j in jit[jit_compile]
          for f in dict.fromkeys(forwards)]


def variants_for(config, all_variants):
  """Variants that change how `config` runs (the others would only repeat a measurement).

  The critic passes (batched / separate) exist in SSL steps only; the export and the input
  pipeline are measured once per image size, in float32 without XLA.
  """
  if config.kind in (EXPORT, PIPELINE):
    return [Variant(image_size=size) for size in dict.fromkeys(v.image_size
                                                               for v in all_variants)]
  if config.kind != SSL:
    all_variants = [dataclasses.replace(v, forward='batched') for v in all_variants]
  return list(dict.fromkeys(all_variants))
