"""Benchmark results: derived rates, the stdout tables and the JSON.

Pure functions of the measured Timings, so that they are tested with fake timings.

Rates: images/s = images per call / median seconds; GFLOP/s = executed FLOPs (flops.py) /
median seconds; "matmul" = that rate over the same run's dense fp32 matmul rate (at its
median time; the matmul is timed in the same rounds as the configs).
"""
import dataclasses
import datetime
import json
import os
import platform
from typing import Optional

from tf_ipmssl.benchmark import configs as configs_lib
from tf_ipmssl.benchmark import flops as flops_lib
from tf_ipmssl.benchmark import timing as timing_lib

JSON_FORMAT_VERSION = 2  # 2: no 'targets' key.
# CPU features that decide the speed of the fp32 and bfloat16 kernels (docs/performance.md).
_CPU_FLAGS = ('avx2', 'fma', 'avx512f', 'avx512_bf16', 'amx_bf16', 'amx_tile')


@dataclasses.dataclass
class Result:
  """The measurements of one (config, variant).

  timings: name -> Timing (SSL: critic_step, generator_step, iteration_1, iteration_nc;
    supervised: iteration; eval: forward; export: batch_<n>; pipeline: batch). The names
    are the JSON's and the tables': `critic_step` is one critic update, `generator_step` one
    generator update, `iteration_1` and `iteration_nc` one training step at n_c = 1 and at
    the config's own n_c, a supervised `iteration` one step (one update).
  flops: name -> {'executed': FLOPs, 'required': FLOPs} per call (none for the pipeline).
  images_per_call: name -> images one call processes (SSL: unlabeled images, B per critic
    update, as the trainer's images/s).
  file_bytes: export: each format timed -> its model's size in bytes (the export config's
    timings are batch_<n> for the SavedModel, <format>_batch_<n> for the others).
  """
  config: str
  kind: str
  description: str
  variant: configs_lib.Variant
  critic_iterations: int
  timings: dict
  flops: dict
  images_per_call: dict
  file_bytes: dict = dataclasses.field(default_factory=dict)

  def images_per_second(self, name):
    return self.images_per_call[name] / self.timings[name].median

  def gflops_per_second(self, name, which=flops_lib.EXECUTED):
    if name not in self.flops:
      return None
    return gflops(self.flops[name][which], self.timings[name])

  def to_json(self, matmul_gflops=None):
    rates = {}
    for name in self.timings:
      rate = {'images_per_second': self.images_per_second(name)}
      if name in self.flops:
        rate['gflops_per_second'] = self.gflops_per_second(name)
        rate['required_gflops_per_second'] = self.gflops_per_second(name, flops_lib.REQUIRED)
        if matmul_gflops:
          rate['fraction_of_matmul'] = rate['gflops_per_second'] / matmul_gflops
      rates[name] = rate
    return {'config': self.config, 'kind': self.kind, 'description': self.description,
            'variant': dataclasses.asdict(self.variant), 'variant_label': self.variant.label,
            'critic_iterations': self.critic_iterations,
            'timings_seconds': {k: v.to_json() for k, v in self.timings.items()},
            'flops': self.flops, 'images_per_call': self.images_per_call, 'rates': rates,
            **({'file_bytes': self.file_bytes} if self.file_bytes else {})}

  @classmethod
  def from_json(cls, value):
    return cls(config=value['config'], kind=value['kind'], description=value['description'],
               variant=configs_lib.Variant(**value['variant']),
               critic_iterations=value['critic_iterations'],
               timings={k: timing_lib.Timing.from_json(v)
                        for k, v in value['timings_seconds'].items()},
               flops=value['flops'], images_per_call=value['images_per_call'],
               file_bytes=value.get('file_bytes', {}))


@dataclasses.dataclass
class BenchmarkRun:
  """One bin/benchmark run: settings, machine, the matmul reference and every Result."""
  settings: dict
  machine: dict
  matmul: dict  # {'size': n, 'timing': Timing}, timed in the same rounds as the configs
  results: list
  command: str = ''
  wall_seconds: Optional[float] = None

  @property
  def matmul_gflops(self):
    """The dense fp32 matmul rate at its median time."""
    n = self.matmul['size']
    return gflops(flops_lib.matmul_flops(n, n, n), self.matmul['timing'])

  def to_json(self):
    n = self.matmul['size']
    matmul = {'size': n, 'flops_per_call': flops_lib.matmul_flops(n, n, n),
              'gflops_per_second': self.matmul_gflops,
              'timing_seconds': self.matmul['timing'].to_json()}
    return {
        'format_version': JSON_FORMAT_VERSION,
        'created': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'command': self.command,
        'wall_seconds': self.wall_seconds,
        'settings': self.settings,
        'machine': self.machine,
        'matmul': matmul,
        'results': [r.to_json(self.matmul_gflops) for r in self.results],
    }

  @classmethod
  def from_json(cls, value):
    matmul = {'size': value['matmul']['size'],
              'timing': timing_lib.Timing.from_json(value['matmul']['timing_seconds'])}
    return cls(settings=value['settings'], machine=value['machine'], matmul=matmul,
               results=[Result.from_json(r) for r in value['results']],
               command=value.get('command', ''), wall_seconds=value.get('wall_seconds'))


def gflops(count, timing):
  """GFLOP/s of `count` FLOPs per call at the median time of `timing`."""
  return count / timing.median / 1e9


def machine_info():
  """CPU model, logical CPUs, relevant CPU flags, GPUs and library versions."""
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_ipmssl import version  # pylint: disable=g-import-not-at-top
  from tf_ipmssl.run_dir import cpu_info  # pylint: disable=g-import-not-at-top
  info = cpu_info.cpuinfo()
  cpu_flags = cpu_info.flags(info)
  return {
      'cpu_model': info.get('model name') or platform.processor() or platform.machine(),
      'logical_cpus': os.cpu_count(),
      'onednn': _onednn_enabled(),
      'tf_enable_onednn_opts': os.environ.get('TF_ENABLE_ONEDNN_OPTS'),
      'cpu_flags': {flag: flag in cpu_flags for flag in _CPU_FLAGS},
      'gpus': [d.name for d in tf.config.list_physical_devices('GPU')],
      'tensorflow': tf.__version__,
      'keras': keras.__version__,
      'tf_ipmssl': version.__version__,
      'python': platform.python_version(),
  }


def _onednn_enabled():
  """Whether TensorFlow runs its oneDNN CPU kernels (None if this TF cannot say)."""
  try:
    from tensorflow.python.util import _pywrap_util_port  # pylint: disable=g-import-not-at-top
    return bool(_pywrap_util_port.IsMklEnabled())
  except (ImportError, AttributeError):
    return None


# ----- text output -----

def format_load(load):
  return ' / '.join(f'{x:.2f}' for x in load) + ' (1 / 5 / 15 min)'


def format_number(x):
  """Three significant digits without an exponent (0.0123, 1.23, 12.3, 123, 1234)."""
  if abs(x) >= 100:
    return f'{x:.0f}'
  return f'{x:.3g}' if abs(x) >= 1e-3 else f'{x:.2g}'


def format_timing(t, scale=1.0):
  """'median [min-max]' of a Timing, times `scale`; '*' marks a derived one."""
  values = [format_number(x * scale) for x in (t.median, t.min, t.max)]
  return f'{values[0]} [{values[1]}-{values[2]}]' + ('*' if t.derived else '')


def _table(headers, rows):
  widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]
  lines = ['  '.join(str(x).ljust(w) for x, w in zip(headers, widths)).rstrip()]
  lines.append('  '.join('-' * w for w in widths))
  lines += ['  '.join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
  return '\n'.join(lines)


def _on_off(flag):
  return 'unknown' if flag is None else ('on' if flag else 'off')


def _percent(value, matmul):
  return f'{100 * value / matmul:.0f}%'


def _gflop(count):
  return f'{count / 1e9:.1f}'


def _training_rows(run):
  rows = []
  for r in run.results:
    if r.kind == configs_lib.SSL:
      it1 = r.flops['iteration_1']
      count = _gflop(it1[flops_lib.EXECUTED])
      if it1[flops_lib.REQUIRED] != it1[flops_lib.EXECUTED]:
        count += f' ({_gflop(it1[flops_lib.REQUIRED])})'
      rate = r.gflops_per_second('iteration_1')
      rows.append([r.config, r.variant.label, r.critic_iterations,
                   format_timing(r.timings['critic_step']),
                   format_timing(r.timings['generator_step']),
                   format_timing(r.timings['iteration_1']),
                   format_timing(r.timings['iteration_nc']),
                   f'{r.images_per_second("iteration_nc"):.1f}',
                   count, _gflop(r.flops['iteration_nc'][flops_lib.EXECUTED]),
                   f'{rate:.1f}', _percent(rate, run.matmul_gflops)])
    elif r.kind == configs_lib.SUPERVISED:
      rate = r.gflops_per_second('iteration')
      count = _gflop(r.flops['iteration'][flops_lib.EXECUTED])
      rows.append([r.config, r.variant.label, '-', format_timing(r.timings['iteration']), '-',
                   format_timing(r.timings['iteration']), '-',
                   f'{r.images_per_second("iteration"):.1f}', count, '-', f'{rate:.1f}',
                   _percent(rate, run.matmul_gflops)])
  return rows


def _inference_rows(run):
  rows = []
  for r in run.results:
    if r.kind in (configs_lib.EVAL, configs_lib.EXPORT):
      for name in r.timings:
        rate = r.gflops_per_second(name)
        runtime = name.rsplit('batch_', 1)[0].rstrip('_')  # export: the format, if not SavedModel.
        rows.append([f'{r.config} {runtime}' if runtime else r.config, r.variant.label,
                     r.images_per_call[name],
                     format_timing(r.timings[name], scale=1e3),
                     f'{r.images_per_second(name):.1f}', f'{rate:.1f}',
                     _percent(rate, run.matmul_gflops)])
  return rows


def format_run(run: BenchmarkRun) -> str:
  """The readable report printed on stdout."""
  s, m = run.settings, run.machine
  n = run.matmul['size']
  matmul_rates = [format_number(flops_lib.matmul_flops(n, n, n) / t / 1e9)
                  for t in (run.matmul['timing'].max, run.matmul['timing'].min)]
  lines = [
      f'tf_ipmssl benchmark: critic width {s["width"]}, batch {s["batch_size"]}, '
      f'eval batch {s["eval_batch_size"]}; {s["warmup"]} warm-up call(s), '
      f'{s["repeats"]} timed repeat(s): median [min-max]',
      f'machine: {m["cpu_model"]}, {m["logical_cpus"]} logical CPUs, GPUs: '
      f'{", ".join(m["gpus"]) or "none"}; TensorFlow {m["tensorflow"]} (oneDNN '
      f'{_on_off(m.get("onednn"))}), Keras {m["keras"]}',
      f'load average: start {format_load(m["load_average_start"])}; '
      f'end {format_load(m["load_average_end"])}',
      f'dense fp32 matmul {n}x{n}x{n}: {run.matmul_gflops:.1f} GFLOP/s '
      f'[{matmul_rates[0]}-{matmul_rates[1]}] (timed in the same rounds as the configs)',
  ]
  if run.wall_seconds is not None:
    lines.append(f'wall time: {run.wall_seconds:.0f} s')
  training = _training_rows(run)
  if training:
    lines += ['', 'Training (seconds per call; * = derived from the measured iteration and '
              'generator step, see docs/performance.md)',
              _table(['config', 'variant', 'n_c', 'critic step', 'generator step',
                      'iter n_c=1', 'iter own n_c', 'img/s', 'GFLOP it1 (req)',
                      'GFLOP own', 'GFLOP/s', 'matmul'], training)]
  inference = _inference_rows(run)
  if inference:
    lines += ['', 'Inference (milliseconds per batch)',
              _table(['config', 'variant', 'batch', 'ms/batch', 'img/s', 'GFLOP/s', 'matmul'],
                     inference)]
  for r in run.results:
    if r.file_bytes:
      lines.append(f'{r.config} [{r.variant.label}] model size: ' + ', '.join(
          f'{name} {size / 1e6:.2f} MB' for name, size in r.file_bytes.items()))
  for r in run.results:
    if r.kind == configs_lib.PIPELINE:
      t = r.timings['batch']
      lines += ['', f'Input pipeline (training_stream, batch {r.images_per_call["batch"]}): '
                f'{format_timing(t, scale=1e3)} ms/batch, {1 / t.median:.0f} batches/s, '
                f'{r.images_per_second("batch"):.0f} images/s']
  return '\n'.join(lines)


def format_result_line(result: Result) -> str:
  """One progress line: each timing's median."""
  parts = [f'{name} {format_timing(t)} s' for name, t in result.timings.items()]
  return ', '.join(parts)


def write_json(run: BenchmarkRun, path):
  with open(path, 'w') as f:
    json.dump(run.to_json(), f, indent=2)
    f.write('\n')
