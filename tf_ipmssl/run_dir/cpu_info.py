"""The CPU a run computes on: what decides its float results besides the code.

Kernels that use AVX-512 (and its extensions: AVX512_BF16, AMX, ...) sum in another order
than AVX2 kernels, so the same run follows another trajectory on another CPU. oneDNN, whose
kernels TensorFlow's matrix products use even with TF_ENABLE_ONEDNN_OPTS=0, can be held to
an older instruction set with ONEDNN_MAX_CPU_ISA (e.g. AVX2, to compute as an AVX2 CPU
does): the signature then names that limit. A run writes `description()` to
versions.json; the fingerprint test keys its fingerprints by `signature`.
"""
import os
from typing import Optional, Tuple

# The environment variables by which oneDNN's kernels are held to an instruction set (the
# second is its former name).
ISA_LIMITS = ('ONEDNN_MAX_CPU_ISA', 'DNNL_MAX_CPU_ISA')


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


def flags(info) -> frozenset:
  """The CPU flags of `info` (cpuinfo's fields), e.g. {'avx2', 'avx512f', ...}."""
  return frozenset(info.get('flags', '').split())


def isa_limit(environ=None) -> Optional[Tuple[str, str]]:
  """(variable, value) of the oneDNN instruction-set limit set in `environ` (default
  os.environ), None where there is none."""
  environ = os.environ if environ is None else environ
  return next(((k, environ[k]) for k in ISA_LIMITS if environ.get(k)), None)


def signature(info=None, environ=None):
  """CPU kernels and TensorFlow version, e.g. 'no-avx512f tensorflow-2.21.0'.

  AVX-512 CPUs differ in the extensions the kernels may pick, so their signature also
  names the CPU (vendor, family, model): 'avx512f GenuineIntel-6-207 tensorflow-2.21.0'.
  Under a oneDNN instruction-set limit (`environ`, default os.environ) it is named too:
  'avx512f GenuineIntel-6-207 onednn-max-isa=AVX2 tensorflow-2.21.0'.
  """
  # TensorFlow is imported here, not above, so that reading the CPU (cpuinfo, isa_limit, as
  # the test suite's report header does) does not load it.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  info = cpuinfo() if info is None else info
  limit = isa_limit(environ)
  limit = f' onednn-max-isa={limit[1].upper()}' if limit else ''
  if 'avx512f' not in flags(info):
    return f'no-avx512f{limit} tensorflow-{tf.__version__}'
  cpu = '-'.join(info.get(k, '?') for k in ('vendor_id', 'cpu family', 'model'))
  return f'avx512f {cpu}{limit} tensorflow-{tf.__version__}'


def description(info=None):
  """{'model_name', 'signature'}: the CPU as versions.json holds it."""
  info = cpuinfo() if info is None else info
  return {'model_name': info.get('model name'), 'signature': signature(info)}
