"""tf_ipmssl: semi-supervised learning with IPM-based GANs (docs/algorithm.md)."""
from tf_ipmssl.version import __version__
