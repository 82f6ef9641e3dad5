"""The analytic FLOP counter against hand computations and against TensorFlow's own graph."""
import keras
import numpy as np
import pytest

import tensorflow as tf

from tf_ipmssl.benchmark import configs
from tf_ipmssl.benchmark import flops
from tf_ipmssl.benchmark import suite
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import fisher as fisher_lib
from tf_ipmssl.objectives import gradient_penalty as gp_lib
from tf_ipmssl.objectives import sobolev as sobolev_lib


def _built(input_shape, layer):
  keras.Sequential([keras.Input(input_shape), layer])
  return layer


def test_conv_layer():
  layer = _built((8, 8, 3), keras.layers.Conv2D(5, 3, strides=2, padding='same'))
  assert flops.layer_flops(layer) == 2 * 4 * 4 * 3 * 3 * 3 * 5  # 2·H_out·W_out·k·k·C_in·C_out
  valid = _built((8, 8, 3), keras.layers.Conv2D(5, 3, padding='valid'))
  assert flops.layer_flops(valid) == 2 * 6 * 6 * 3 * 3 * 3 * 5


def test_transposed_conv_layer_counts_the_conv_it_transposes():
  layer = _built((4, 4, 6), keras.layers.Conv2DTranspose(2, 4, strides=2, padding='same'))
  assert flops.layer_flops(layer) == 2 * 4 * 4 * 4 * 4 * 6 * 2  # 2·H_in·W_in·k·k·C_in·C_out
  conv = _built((8, 8, 2), keras.layers.Conv2D(6, 4, strides=2, padding='same'))
  assert flops.layer_flops(conv) == flops.layer_flops(layer)


def test_dense_and_elementwise_layers():
  assert flops.layer_flops(_built((7,), keras.layers.Dense(3))) == 2 * 7 * 3
  assert flops.layer_flops(_built((7,), keras.layers.LeakyReLU(0.2))) == 0


# The algorithm.md#critic table at width 1, C = 3, K = 10: 2 · H_out · W_out · k² · C_in · C_out.
CRITIC_LAYERS_WIDTH_1 = [
    2 * 32 * 32 * 9 * 3 * 96,      # conv1
    2 * 32 * 32 * 9 * 96 * 96,     # conv2
    2 * 16 * 16 * 9 * 96 * 96,     # conv3, stride 2
    2 * 16 * 16 * 9 * 96 * 192,    # conv4
    2 * 16 * 16 * 9 * 192 * 192,   # conv5
    2 * 8 * 8 * 9 * 192 * 192,     # conv6, stride 2
    2 * 6 * 6 * 9 * 192 * 384,     # conv7, valid
    2 * 4 * 4 * 9 * 384 * 384,     # conv8, valid
    2 * 4 * 4 * 1 * 384 * 384,     # conv9, 1x1
    2 * 6144 * 1,                  # v
    2 * 6144 * 10,                 # S
]
# algorithm.md#networks generator, ngf = 64: transposed convs count 2 · H_in · W_in · k² · C_in · C_out.
GENERATOR_LAYERS = [
    2 * 1 * 1 * 16 * 100 * 256,    # convt1 4x4 valid
    2 * 4 * 4 * 16 * 256 * 128,    # convt2 s2
    2 * 8 * 8 * 16 * 128 * 64,     # convt3 s2
    2 * 16 * 16 * 9 * 64 * 64,     # conv4
    2 * 16 * 16 * 9 * 64 * 64,     # conv5
    2 * 16 * 16 * 16 * 64 * 3,     # convt6 s2
]


@pytest.fixture(scope='module')
def paper_networks():
  critic = critic_lib.build_critic(critic_lib.BuildCritic(width=1.0), 10, 3, seed=0)
  generator = generator_lib.build_generator(generator_lib.BuildGenerator(), 3, seed=0)
  return (flops.NetworkCost.of(flops.critic_costs(critic)),
          flops.NetworkCost.of(flops.generator_costs(generator)))


def test_paper_critic_and_generator_forward(paper_networks):
  critic, generator = paper_networks
  assert critic.forward == sum(CRITIC_LAYERS_WIDTH_1)
  assert critic.first_layer == CRITIC_LAYERS_WIDTH_1[0]
  assert critic.forward == pytest.approx(0.61e9, rel=0.01)  # The expected ≈0.61 GFLOP.
  assert generator.forward == sum(GENERATOR_LAYERS)
  assert generator.first_layer == GENERATOR_LAYERS[0]


def test_pass_multipliers():
  net = flops.NetworkCost(forward=100, first_layer=10)
  gen = flops.NetworkCost(forward=7, first_layer=1)
  assert net.training() == 100 + 2 * 100 - 10   # forward + backward, no gradient into data
  assert net.gradient_penalty() == 100 + 2 * 100  # input gradient + double backward
  b = 4
  fisher = configs.CONFIGS['fisher'].constraints
  sobolev = configs.CONFIGS['fisher_sobolev'].constraints
  gp = configs.CONFIGS['gp'].constraints
  assert flops.critic_update_flops(net, gen, fisher, b) == {
      'executed': b * 7 + 3 * b * 290, 'required': b * 7 + 3 * b * 290}
  # Sobolev needs ∇_x at the real and generated rows; batched, those 2B rows are stacked in
  # their own critic call, so the gradient runs on them only.
  assert flops.critic_update_flops(net, gen, sobolev, b) == {
      'executed': b * 7 + 3 * b * 290 + 2 * b * 300,
      'required': b * 7 + 3 * b * 290 + 2 * b * 300}
  # GP adds B interpolate rows and needs ∇_x at those only.
  assert flops.critic_update_flops(net, gen, gp, b) == {
      'executed': b * 7 + 4 * b * 290 + b * 300,
      'required': b * 7 + 4 * b * 290 + b * 300}
  # Sobolev on f- and GP on f: both components' gradients run over the 3B stacked rows.
  both = (fisher_lib.Fisher('f'), sobolev_lib.Sobolev('f_neg'), gp_lib.GradientPenalty('f'))
  assert flops.critic_update_flops(net, gen, both, b) == {
      'executed': b * 7 + 4 * b * 290 + 2 * 3 * b * 300,
      'required': b * 7 + 4 * b * 290 + 3 * b * 300}
  separate = flops.critic_update_flops(net, gen, gp, b, batched=False)
  assert separate['executed'] == separate['required']
  # Generator update: G forward, critic forward + input gradient, G backward (none into z).
  assert flops.generator_update_flops(net, gen, b) == b * (7 + 100 + 100 + 2 * 7 - 1)
  assert flops.ssl_step_flops(net, gen, fisher, b, 2)['executed'] == (
      2 * (b * 7 + 3 * b * 290) + b * (7 + 200 + 13))
  assert flops.supervised_step_flops(net, b) == b * 290
  assert flops.forward_flops(net, b) == b * 100


def test_paper_step_counts(paper_networks):
  """The expected ≈450 GFLOP is one n_c = 1 step; ≈690 is Sobolev's required count."""
  critic, generator = paper_networks
  fisher = flops.ssl_step_flops(critic, generator, configs.CONFIGS['fisher'].constraints,
                                64, 1)
  assert fisher['executed'] == pytest.approx(450e9, rel=0.01)
  sobolev = flops.ssl_step_flops(
      critic, generator, configs.CONFIGS['fisher_sobolev'].constraints, 64, 1)
  assert sobolev['required'] == pytest.approx(690e9, rel=0.02)


# ----- the counts against the ops TensorFlow actually traces -----

def _graph_flops(fn, *specs):
  """2·MACs of every conv, conv-backprop and matmul op the traced fn's outputs depend on."""
  concrete = tf.function(fn).get_concrete_function(*specs)
  graph = concrete.graph
  needed = tf.compat.v1.graph_util.extract_sub_graph(
      graph.as_graph_def(), [t.op.name for t in concrete.outputs])
  needed = {node.name for node in needed.node}
  total = 0
  for op in graph.get_operations():
    if op.name not in needed:
      continue
    if op.type == 'Conv2D':
      total += 2 * np.prod(op.outputs[0].shape[:3]) * np.prod(op.inputs[1].shape)
    elif op.type == 'Conv2DBackpropInput':
      total += 2 * np.prod(op.inputs[2].shape[:3]) * np.prod(op.inputs[1].shape)
    elif op.type == 'Conv2DBackpropFilter':
      total += 2 * np.prod(op.inputs[2].shape[:3]) * np.prod(op.outputs[0].shape)
    elif op.type == 'MatMul':
      a, b = op.inputs[0].shape, op.inputs[1].shape
      m, k = (a[1], a[0]) if op.get_attr('transpose_a') else (a[0], a[1])
      n = b[0] if op.get_attr('transpose_b') else b[1]
      total += 2 * m * n * k
    else:
      assert 'Conv' not in op.type and 'MatMul' not in op.type, op.type
  return int(total)


def test_counts_match_the_traced_graph():
  """Multipliers and row counts are those of the graph the algorithm (algorithms.Algorithm) builds.

  Only the heads differ slightly (∇_x f- does not use the S head): under 0.1%.
  """
  batch = 4
  options = suite.Options(width=0.0625, batch_size=batch)
  config = configs.CONFIGS['gp']  # Forward, backward, input gradient, double backward.
  variant = configs.Variant()
  run = suite.build_networks(config, variant, options)
  steps = suite.build_algorithm(variant, run, critic_iterations=1)
  critic, generator = (flops.NetworkCost.of(flops.critic_costs(run.critic)),
                       flops.NetworkCost.of(flops.generator_costs(run.generator)))
  image = tf.TensorSpec([batch, 32, 32, 3])
  traced = _graph_flops(steps._critic_gradients_impl, image,  # pylint: disable=protected-access
                        tf.TensorSpec([batch], tf.int32), image, tf.TensorSpec([], tf.int64))
  expected = flops.critic_update_flops(critic, generator, config.constraints, batch)
  assert traced == pytest.approx(expected['executed'], rel=1e-3)
  traced = _graph_flops(
      # The real batch is only read by the feature-matching generator loss (not used here).
      lambda step, x_real: steps._generator_gradients_impl(step, batch, x_real),  # pylint: disable=protected-access
      tf.TensorSpec([], tf.int64), image)
  assert traced == flops.generator_update_flops(critic, generator, batch)


def _critic_input_batches(steps, batch):
  """Batch sizes of the critic's first-layer convolutions in one traced critic update."""
  image = tf.TensorSpec([batch, 32, 32, 3])
  # pylint: disable-next=protected-access
  concrete = tf.function(steps._critic_gradients_impl).get_concrete_function(
      image, tf.TensorSpec([batch], tf.int32), image, tf.TensorSpec([], tf.int64))
  return sorted(op.inputs[0].shape[0] for op in concrete.graph.get_operations()
                if op.type == 'Conv2D' and op.inputs[0].shape[-1] == 3)


def test_forward_variant_sets_the_critic_passes():
  """--forward=separate runs one critic call per batch; batched stacks them."""
  batch = 4
  options = suite.Options(width=0.0625, batch_size=batch)
  config = configs.CONFIGS['fisher']  # No input gradients: one stack of all three batches.
  sizes = {}
  for forward in configs.FORWARDS:
    variant = configs.Variant(forward=forward)
    run = suite.build_networks(config, variant, options)
    steps = suite.build_algorithm(variant, run, critic_iterations=1)
    assert steps.critic_forward == forward and steps.run is run
    assert steps.run_config is run.config and steps.settings.critic_iterations == 1
    sizes[forward] = _critic_input_batches(steps, batch)
  assert sizes == {'batched': [3 * batch], 'separate': [batch] * 3}


def test_batched_variant_refuses_a_batch_norm_critic():
  options = suite.Options(width=0.0625, batch_size=4)
  config = configs.BenchmarkConfig('bn', configs.SSL, 'Fisher, batch norm',
                                   normalization='batch_norm',
                                   constraint_specs=(('fisher', 'f'),))
  variant = configs.Variant(forward='batched')
  run = suite.build_networks(config, variant, options)
  with pytest.raises(ValueError, match='batch norm'):
    suite.build_algorithm(variant, run, critic_iterations=1)
