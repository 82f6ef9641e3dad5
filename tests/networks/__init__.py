"""Tests of tf_ipmssl.networks."""
