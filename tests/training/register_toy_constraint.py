"""Registers the toy constraint (toy_constraint.py) for the process that imports this module:
a gin file's `import tests.training.register_toy_constraint`."""
from tests.training import toy_constraint
from tf_ipmssl.objectives import constraint

ToyCentering = constraint.register(toy_constraint.ToyCentering)
