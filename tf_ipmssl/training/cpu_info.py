"""The CPU a run computes on: what decides its float results besides the code.

Kernels that use AVX-512 (and its extensions: AVX512_BF16, AMX, ...) sum in another order
than AVX2 kernels, so the same run follows another trajectory on another CPU. A run records
`description()` in versions.json; the fingerprint test keys its fingerprints by `signature`.
"""
import tensorflow as tf


def cpuinfo(path='/proc/cpuinfo'):
  """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
  fields = {}
  try:
    with open(path) as f:
      for line in f:
        if not line.strip():
          break
        key, _, value = line.partition(':')
        fields[key.strip()] = value.strip()
  except OSError:
    pass
  return fields


def signature(info=None):
  """CPU kernels and TensorFlow version, e.g. 'no-avx512f tensorflow-2.21.0'.

  AVX-512 CPUs differ in the extensions the kernels may pick, so their signature also
  names the CPU (vendor, family, model): 'avx512f GenuineIntel-6-207 tensorflow-2.21.0'.
  """
  info = cpuinfo() if info is None else info
  if 'avx512f' not in info.get('flags', '').split():
    return f'no-avx512f tensorflow-{tf.__version__}'
  cpu = '-'.join(info.get(k, '?') for k in ('vendor_id', 'cpu family', 'model'))
  return f'avx512f {cpu} tensorflow-{tf.__version__}'


def description(info=None):
  """{'model_name', 'signature'}: the CPU as versions.json records it."""
  info = cpuinfo() if info is None else info
  return {'model_name': info.get('model name'), 'signature': signature(info)}
