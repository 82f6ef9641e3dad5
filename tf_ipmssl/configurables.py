"""Imports every module that registers gin configurables, so any gin file can be parsed."""
# pylint: disable=unused-import
from tf_ipmssl.data import ssl_data
from tf_ipmssl.networks import critic
from tf_ipmssl.networks import generator
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev
from tf_ipmssl.objectives import weight_clipping
from tf_ipmssl.training import distribution
from tf_ipmssl.training import run_config
