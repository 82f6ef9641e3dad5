"""Registers the toy algorithm (toy_algorithm.py) for the process that imports this module:
a gin file's `import tests.training.register_toy_algorithm`."""
from tests.training import toy_algorithm
from tf_ipmssl.training import algorithms

EntropyMinimization = algorithms.register(toy_algorithm.EntropyMinimization)
