"""tf_ipmssl: semi-supervised learning with IPM-based GANs (docs/algorithm.md).

The Python API (tf_ipmssl/api.py; README, "Python API"): `train`, `evaluate`, `export`,
`load` and `predict`, as bin/train, bin/evaluate, bin/export and bin/predict do, and
`configuration`, the validated configuration of gin files and bindings. They are
imported on first use, so that `import tf_ipmssl` (the version, the cell registry) does not
import TensorFlow.
"""
import importlib

from tf_ipmssl.version import __version__

# The API's functions, from tf_ipmssl.api.
_API = ('configuration', 'train', 'evaluate', 'export', 'load', 'predict')


def __getattr__(name):
  if name not in _API:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  return getattr(importlib.import_module(f'{__name__}.api'), name)


def __dir__():
  return sorted(list(globals()) + list(_API))
