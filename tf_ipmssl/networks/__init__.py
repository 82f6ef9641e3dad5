"""Critic, generator and critic normalizations (docs/algorithm.md#networks)."""
from tf_ipmssl.networks.critic import Critic
from tf_ipmssl.networks.critic import ReplicaAwareDropout
from tf_ipmssl.networks.critic import build_critic
from tf_ipmssl.networks.generator import Generator
from tf_ipmssl.networks.generator import build_generator
from tf_ipmssl.networks.normalization import NORMALIZATIONS
from tf_ipmssl.networks.normalization import ConfigurableLayerNorm
from tf_ipmssl.networks.normalization import make_batch_norm
from tf_ipmssl.networks.normalization import make_normalization
