"""The library's algorithms (what train.mode names) and constraints (what a gin file names
as `@Fisher()`, and a run_config.json by type), in one place.

The registries (algorithms.py, objectives/constraint.py) register these at their first use,
so no import order matters; an algorithm or constraint of your own registers from its own
module (`@algorithms.register`, `@constraint.register`; docs/algorithm.md).
"""
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev
from tf_ipmssl.objectives import weight_clipping
from tf_ipmssl.training import semi_supervised
from tf_ipmssl.training import supervised

ALGORITHMS = (semi_supervised.SemiSupervised, supervised.Supervised)
CONSTRAINTS = (gradient_penalty.GradientPenalty, fisher.Fisher, sobolev.Sobolev,
               weight_clipping.WeightClipping)
