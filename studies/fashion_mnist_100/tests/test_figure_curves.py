"""The mean validation curves the study's two figures draw (scripts/fashion_mnist_curves.py,
scripts/fashion_mnist_study_figure.py), against the means computed here by hand."""
import importlib.util
import pathlib

import numpy as np
import pytest

pytest.importorskip('matplotlib')
SCRIPTS = pathlib.Path(__file__).resolve().parents[1] / 'scripts'


def _script(name):
  spec = importlib.util.spec_from_file_location(name, SCRIPTS / f'{name}.py')
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_the_curves_figure_averages_the_steps_every_seed_has():
  curves = [{2: 40.0, 4: 30.0, 6: 20.0}, {2: 44.0, 4: 31.0}, {2: 42.0, 4: 35.0, 8: 1.0}]
  xs, means = _script('fashion_mnist_curves').mean_curve(curves)
  assert xs == [2, 4]
  np.testing.assert_allclose(means, [(40 + 44 + 42) / 3, (30 + 31 + 35) / 3], rtol=1e-12)


def test_the_study_figure_averages_the_first_evaluations_in_critic_updates():
  curves = [[(50, 40.0), (100, 30.0), (150, 25.0)], [(50, 36.0), (100, 32.0)]]
  steps, means = _script('fashion_mnist_study_figure').mean_curve(curves, critic_per_step=2)
  assert steps == [100, 200]
  np.testing.assert_allclose(means, [38.0, 31.0], rtol=1e-12)
