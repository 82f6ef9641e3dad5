"""The run configuration: every train binding and algorithm setting validated in one place,
before the model dir is touched, recorded as JSON; and one constructor (run.Run) for every
program's networks."""
import ast
import json
import math
import os
import pathlib
import re

import gin
import pytest

from tests.training import runs
from tests.training import toy_algorithm
from tests.training import toy_constraint
from tf_ipmssl import configurables
from tf_ipmssl import errors
from tf_ipmssl.data import augmentation
from tf_ipmssl.data import ssl_data
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.networks import generator as generator_lib
from tf_ipmssl.objectives import constraint
from tf_ipmssl.objectives import fisher
from tf_ipmssl.objectives import gradient_penalty
from tf_ipmssl.objectives import sobolev
from tf_ipmssl.run_dir import config_formats
from tf_ipmssl.training import algorithms
from tf_ipmssl.training import distribution
from tf_ipmssl.training import run_config
from tf_ipmssl.training import semi_supervised

FISHER = [fisher.Fisher()]


SSL = {'constraints': FISHER}


@pytest.mark.parametrize('bindings,fragment', [
    ({'steps': 0}, 'train.steps must be an integer >= 1'),
    ({'steps': 'ten'}, 'train.steps must be an integer'),
    ({'steps': None}, 'set the training length'),
    ({'batch_size': 0}, 'train.batch_size must be an integer >= 1'),
    ({'eval_every': 2.5}, 'train.eval_every must be an integer'),
    ({'critic_learning_rate': -1.0}, 'train.critic_learning_rate must be a number >= 0'),
    ({'early_stopping_patience': 0}, 'train.early_stopping_patience must be an integer >= 1'),
    ({'early_stopping_min_steps': -1}, 'train.early_stopping_min_steps must be an integer'),
    ({'mode': 'semi'}, "train.mode = 'semi' is not one of ['ssl', 'supervised']"),
    ({'optimizer': 'sgd'}, "unknown optimizer 'sgd'"),
    ({'adam_epsilon_placement': 'torch'}, 'train.adam_epsilon_placement'),
    ({'mixed_precision': 'fp16'}, 'train.mixed_precision'),
    ({'critic_ema_decay': 1.0}, 'train.critic_ema_decay must be None or a float in (0, 1)'),
    ({'learning_rate_linear_decay_start': 1.0}, 'learning_rate_linear_decay_start'),
    ({'baseline': 'runs.csv'}, 'train.baseline must be None or'),
])
def test_every_field_is_validated(bindings, fragment):
  with pytest.raises(errors.ConfigError) as raised:
    run_config.RunConfig.create(settings=SSL, **{'steps': 10, **bindings})
  assert fragment in str(raised.value)


@pytest.mark.parametrize('settings,fragment', [
    ({'ipm_rampup_updates': True}, 'ssl.ipm_rampup_updates must be an integer'),
    ({'critic_iterations': 0}, 'ssl.critic_iterations must be an integer >= 1'),
    ({'lambda_ce': -1.0}, 'ssl.lambda_ce must be a number >= 0'),
    ({'constraint_penalty_scale': 'x'}, 'ssl.constraint_penalty_scale must be a number'),
    ({'formulation': 'kplus2'}, "ssl.formulation = 'kplus2' is not one of ['plain', "),
    ({'generator_loss': 'hinge'}, "ssl.generator_loss = 'hinge' is not one of"),
    ({'constraints': []}, 'the critic has no constraint: an unconstrained IPM critic is '
     'unbounded. Bind e.g. `ssl.constraints = [@Fisher()]`'),
    ({'formulation': 'plain', 'constraints': [fisher.Fisher('f-')]},
     "'plain' formulation does not have"),
    ({'beta': 0.3}, "ssl has no setting(s) ['beta']; its settings are ['formulation', "),
])
def test_every_algorithm_setting_is_validated_by_its_gin_name(settings, fragment):
  with pytest.raises(errors.ConfigError) as raised:
    run_config.RunConfig.create(settings={**SSL, **settings}, steps=10)
  assert fragment in str(raised.value)


@pytest.mark.parametrize('name', config_formats.SSL_SETTINGS_IN_TRAIN)
def test_a_setting_bound_at_its_old_place_names_its_new_one(name):
  """Each semi-supervised setting that train held is refused there, in one line naming
  ssl.<name>, in Python and from gin."""
  with pytest.raises(errors.ConfigError) as raised:
    run_config.RunConfig.create(settings=SSL, steps=10, **{name: 1})
  assert str(raised.value) == (f'train.{name} is now a setting of the algorithm: bind '
                               f'ssl.{name} instead (e.g. `ssl.{name} = ...` in place of '
                               f'`train.{name} = ...`)')
  gin.clear_config()
  try:
    gin.parse_config([f'train.{name} = 1', 'ssl.constraints = [@Fisher()]', 'train.steps = 2'])
    with pytest.raises(errors.ConfigError, match=rf'bind ssl\.{name} instead'):
      configurables.run_config()
  finally:
    gin.clear_config()


def test_another_algorithms_settings_are_not_read():
  """A supervised run reads no ssl.* setting (a base the supervised cells include binds
  them), and a setting of the mode's algorithm is read under its name."""
  gin.clear_config()
  try:
    gin.parse_config(["train.mode = 'supervised'", 'ssl.lambda_ce = -1.0',
                      'ssl.constraints = []', 'train.steps = 2'])
    supervised = configurables.run_config()
    gin.parse_config(["train.mode = 'ssl'", 'ssl.lambda_ce = 0.25',
                      'ssl.constraints = [@Fisher()]'])
    ssl = configurables.run_config()
  finally:
    gin.clear_config()
  assert supervised.algorithm_settings == algorithms.NoSettings()
  assert supervised.to_json()['supervised'] == {}
  assert ssl.algorithm_settings.lambda_ce == 0.25
  assert ssl.algorithm_settings.constraints == (fisher.Fisher(),)
  assert ssl.to_json()['ssl']['lambda_ce'] == 0.25


def test_groups_scales_and_algorithm():
  config = run_config.RunConfig.create(
      settings=dict(constraints=[fisher.Fisher(penalty_weight=1e-7),
                                 sobolev.Sobolev('f-', 1e-8),
                                 gradient_penalty.GradientPenalty('f', 10.0)],
                    constraint_penalty_scale=1000.0, critic_iterations=5),
      critic_learning_rate=2e-4, generator_learning_rate=1e-4, learning_rate_scale=5.0,
      steps=3)
  assert config.mode == 'ssl' and config.algorithm is semi_supervised.SemiSupervised
  assert config.critic_rate == 2e-4 * 5.0
  assert config.generator_rate == 1e-4 * 5.0
  # ρ of the augmented-Lagrangian constraints scaled; λ_GP not.
  assert [c.penalty_weight for c in config.constraints[:2]] == [1e-7 * 1000.0, 1e-8 * 1000.0]
  assert config.constraints[2].weight == 10.0
  assert config.algorithm_settings.critic_iterations == 5
  assert config.algorithm.critic_updates_per_step(config.algorithm_settings) == 5
  # The settings as bound, unscaled (recorded under 'ssl').
  assert config.algorithm_settings.constraints[0].penalty_weight == 1e-7
  assert config.to_json()['ssl']['constraints'][0]['penalty_weight'] == 1e-7
  supervised = run_config.RunConfig.create(mode='supervised', steps=3)
  assert supervised.constraints == ()
  assert supervised.algorithm.critic_updates_per_step(supervised.algorithm_settings) == 1


def test_json_names_every_setting():
  gin.clear_config()
  try:
    gin.parse_config(['build_critic.width = 0.5'])  # Not read: create() takes no gin.
    config = run_config.RunConfig.create(
        settings=dict(constraints=[fisher.Fisher()], lambda_ce=0.5), steps=3,
        learning_rate_scale=2.0, critic={'width': 0.25},
        data={'dataset': 'fashion_mnist', 'num_labeled': 100})
    record = json.loads(json.dumps(config.to_json()))
  finally:
    gin.clear_config()
  # One object per gin name: train, the algorithm's (under train.mode) and each builder's.
  assert set(record) == {'format_version', 'train', 'ssl', 'build_ssl_data', 'build_critic',
                         'build_generator', 'make_strategy', 'augmentation'}
  assert record['train']['mode'] == 'ssl'
  assert record['train']['steps'] == 3 and record['train']['seed'] == 0
  # Every builder setting, at the builder's default where not given.
  assert record['build_critic']['width'] == 0.25
  assert record['build_critic']['normalization'] == 'none'
  assert record['build_ssl_data']['num_labeled'] == 100
  assert record['build_generator']['ngf'] == 64
  assert record['make_strategy'] == {'kind': 'auto', 'devices': None}
  # Every setting of the algorithm, under its gin name, at its default where not given;
  # the constraints as bound (the penalty weight stored once, unscaled).
  assert record['ssl'] == {
      'formulation': 'kplus1', 'lambda_ce': 0.5, 'reference_pairwise_f': False,
      'critic_iterations': 2, 'generator_loss': 'ipm', 'ipm_rampup_updates': None,
      'constraint_penalty_scale': 1.0,
      'constraints': [{'type': 'Fisher', 'name': 'fisher_f', 'component': 'f',
                       'penalty_weight': 1e-7}]}
  # Its format version and every train binding as given; nothing derived.
  assert record['format_version'] == config_formats.FORMAT_VERSION == 4
  assert set(record['train']) == set(run_config.default_bindings())
  assert record['train']['learning_rate_scale'] == 2.0
  assert record['train']['critic_learning_rate'] == 2e-4


def _round_trip_configs():
  """Configurations of every kind of setting (built inside the registrations they need)."""
  yield run_config.RunConfig.create(
      settings=dict(constraints=[fisher.Fisher(penalty_weight=1e-7),
                                 sobolev.Sobolev('f-', 1e-8)],
                    constraint_penalty_scale=1000.0, critic_iterations=5,
                    formulation='kplus1_entropy'),
      learning_rate_scale=5.0, steps=3,
      critic={'width': 0.25, 'normalization': 'layer_norm'},
      data={'dataset': 'cifar10', 'num_labeled': 4000, 'split_seed': 3})
  yield run_config.RunConfig.create(mode='supervised', epochs=2.5,
                                    data={'dataset': 'svhn', 'num_labeled': None})
  yield run_config.RunConfig.create(
      settings=dict(constraints=[gradient_penalty.GradientPenalty('f', 10.0)],
                    generator_loss='feature_matching', ipm_rampup_updates=5),
      critic_updates=7, baseline=('runs.csv', 'supervised', 'recipe'), critic_ema_decay=0.99,
      learning_rate_halving_epochs=math.inf, learning_rate_linear_decay_start=0.5,
      distribution={'kind': 'mirrored', 'devices': ['/cpu:0', '/cpu:1']})
  with constraint.REGISTRY.registered(toy_constraint.ToyCentering):
    yield run_config.RunConfig.create(settings=dict(constraints=[
        toy_constraint.ToyCentering('f-', penalty_weight=0.5, v_bound=math.inf)]), steps=2)
  with algorithms.REGISTRY.registered(toy_algorithm.EntropyMinimization):
    yield run_config.RunConfig.create(mode=toy_algorithm.EntropyMinimization.name, steps=2,
                                      seed=4, settings={'beta': 0.7})


def test_json_round_trip():
  """from_json(to_json(c)) is c, and writes the same record, for every kind of setting."""
  configs = 0
  for config in _round_trip_configs():  # Each inside the registrations it needs.
    record = json.loads(json.dumps(config.to_json()))
    rebuilt = run_config.RunConfig.from_json(record, 'text', 'operative')
    assert rebuilt == config
    assert rebuilt.to_json() == config.to_json()
    assert (rebuilt.gin_text, rebuilt.operative_gin_text) == ('text', 'operative')
    configs += 1
  assert configs == 5
  # The non-finite value and the tuples as they were (not strings, not lists).
  inf = next(c for c in _round_trip_configs() if c.train.baseline)
  rebuilt = run_config.RunConfig.from_json(json.loads(json.dumps(inf.to_json())))
  assert rebuilt.train.learning_rate_halving_epochs == math.inf
  assert rebuilt.train.baseline == ('runs.csv', 'supervised', 'recipe')
  assert rebuilt.make_strategy.devices == ('/cpu:0', '/cpu:1')


def test_a_record_of_an_unregistered_type_is_refused_naming_it(tmp_path):
  with constraint.REGISTRY.registered(toy_constraint.ToyCentering):
    toy = run_config.RunConfig.create(settings={'constraints': [toy_constraint.ToyCentering()]},
                                      steps=2)
  with algorithms.REGISTRY.registered(toy_algorithm.EntropyMinimization):
    entropy = run_config.RunConfig.create(mode='entropy_minimization', steps=2)
  with pytest.raises(errors.ConfigError, match='constraint ToyCentering is not registered'):
    run_config.RunConfig.from_json(toy.to_json())
  with pytest.raises(errors.ConfigError, match="train.mode = 'entropy_minimization' is not"):
    run_config.RunConfig.from_json(entropy.to_json())
  with pytest.raises(errors.ConfigError, match='format version 5'):
    run_config.RunConfig.from_json({**toy.to_json(), 'format_version': 5})
  # A program reading such a run says so in one line, naming the file and the type.
  (tmp_path / 'run_config.json').write_text(json.dumps(toy.to_json()))
  result = runs.run_program('evaluate', f'--model_dir={tmp_path}', cwd=str(runs.REPO_ROOT))
  assert result.returncode == 1 and 'Traceback' not in result.stderr, result.stderr
  assert (f'error: {tmp_path / "run_config.json"}: constraint ToyCentering is not '
          'registered in this process') in result.stderr


def _listing(directory):
  """Every path under directory with its size and modification time."""
  out = {}
  for root, _, files in os.walk(directory):
    for name in files:
      stat = os.stat(os.path.join(root, name))
      out[os.path.relpath(os.path.join(root, name), directory)] = (stat.st_size,
                                                                   stat.st_mtime_ns)
  return out


def test_invalid_configuration_leaves_the_model_dir_as_it_was(tmp_path):
  """bin/train refuses each invalid configuration in one line before it creates a model dir
  or changes an existing run's (listing, sizes and times unchanged)."""
  data_dir = runs.make_data(tmp_path / 'data')
  existing = str(tmp_path / 'existing')
  result = runs.run_train(existing, runs.tiny_bindings(data_dir, **{
      'train.steps': 2, 'train.export_classifier': False}))
  assert result.returncode == 0, result.stderr[-2000:]
  # The run records its configuration as used, and metrics.json has one key per number.
  with open(os.path.join(existing, 'run_config.json')) as f:
    recorded = json.load(f)
  assert recorded['train']['steps'] == 2 and recorded['train']['batch_size'] == 16
  assert recorded['build_critic']['width'] == 0.0625
  with open(os.path.join(existing, 'metrics.json')) as f:
    metrics = json.load(f)
  assert set(metrics) == {'step', 'total_steps', 'finished', 'final', 'best', 'multipliers',
                          'exported', 'wall_seconds', 'wall_seconds_this_session',
                          'wall_split', 'wall_split_this_session', 'class_names'}
  assert metrics['wall_seconds'] == metrics['wall_seconds_this_session'] > 0  # One session.
  assert metrics['final']['step'] == 2 and metrics['final']['test_error'] is not None
  before = _listing(existing)
  for binding, fragment in (
      ({'train.batch_size': '0'}, 'train.batch_size must be an integer >= 1'),
      ({'train.mode': "'semi'"}, "train.mode = 'semi' is not one of"),
      ({'train.early_stopping_patience': '5', 'build_ssl_data.validation_size': '0'},
       'early_stopping_patience needs a validation split')):
    for model_dir in (existing, str(tmp_path / 'new')):
      result = runs.run_train(model_dir, runs.tiny_bindings(data_dir, **binding))
      assert result.returncode == 1 and 'Traceback' not in result.stderr, result.stderr
      assert fragment in result.stderr
    assert _listing(existing) == before
    assert not os.path.exists(tmp_path / 'new')


def test_networks_and_optimizers_are_built_by_run_only():
  """No program builds the critic, generator, multipliers or optimizers itself: the bin/
  programs and the library call the builders in run.py alone (the benchmark, diagnose and
  the Python API's load, which bin/evaluate and bin/export call, go through run.Run)."""
  root = runs.REPO_ROOT
  builders = {'build_critic', 'build_generator', 'make_optimizer', 'RunState'}
  callers = set()
  for path in list((root / 'tf_ipmssl').rglob('*.py')) + list((root / 'bin').iterdir()):
    text = path.read_text(errors='replace') if path.is_file() else ''
    if not (path.suffix == '.py' or text.startswith('#!/usr/bin/env python')):
      continue  # bin/setup and the like are shell scripts.
    for node in ast.walk(ast.parse(text)):
      if isinstance(node, ast.Call):
        name = getattr(node.func, 'attr', getattr(node.func, 'id', None))
        if name in builders:
          callers.add(path.relative_to(root).as_posix())
  assert callers == {'tf_ipmssl/training/run.py'}
  for program in ('evaluate', 'export'):
    assert f'api.{program}(' in (root / 'bin' / program).read_text()
  assert 'Run.from_model_dir' in pathlib.Path(root / 'tf_ipmssl/api.py').read_text()
  assert 'Run.from_model_dir' in pathlib.Path(root / 'tf_ipmssl/diagnosis.py').read_text()
  assert 'Run.build' in pathlib.Path(root / 'tf_ipmssl/benchmark/suite.py').read_text()


def test_the_algorithm_reports_its_schedule_and_scales():
  """What the loop logs and the start line prints comes from the algorithm: ssl's IPM
  ramp-up weight exp(−5 (1 − t/T)²) and its penalty scale with the ρ it gives; nothing for
  an algorithm without them."""
  ssl = semi_supervised.SemiSupervised
  ramp = ssl.make_settings({'constraints': FISHER, 'ipm_rampup_updates': 10,
                            'constraint_penalty_scale': 10.0})
  assert ssl.state_scalars(ramp, 5)['ipm_weight'] == pytest.approx(math.exp(-5 * 0.25))
  assert ssl.state_scalars(ramp, 20) == {'ipm_weight': 1.0}
  assert ssl.state_scalars(ssl.make_settings({'constraints': FISHER}), 5) == {}
  assert ssl.scaled_settings(ramp) == 'penalty weights x10 (ρ: fisher_f 1e-06)'
  assert ssl.scaled_settings(ssl.make_settings({'constraints': FISHER})) == ''
  supervised = run_config.RunConfig.create(mode='supervised', steps=1)
  assert supervised.algorithm.state_scalars(supervised.algorithm_settings, 5) == {}
  assert supervised.algorithm.scaled_settings(supervised.algorithm_settings) == ''


@pytest.mark.parametrize('make, message', [
    (lambda: run_config.Train(steps=0), 'train.steps'),
    (lambda: run_config.Train(steps=1, optimizer='sgd'), 'sgd'),
    (lambda: run_config.Train(), 'set the training length'),
    (lambda: ssl_data.BuildSslData(validation_size=-1), 'build_ssl_data.validation_size'),
    (lambda: ssl_data.BuildSslData(dataset='mnist'), 'mnist'),
    (lambda: critic_lib.BuildCritic(width=0), 'build_critic.width'),
    (lambda: critic_lib.BuildCritic(bias_init='ones'), 'build_critic.bias_init'),
    (lambda: generator_lib.BuildGenerator(ngf=0), 'build_generator.ngf'),
    (lambda: distribution.MakeStrategy(kind='tpu'), "unknown distribution 'tpu'"),
    (lambda: augmentation.Augmentations(labeled_translate=-1),
     'augmentation.labeled_translate'),
    (lambda: augmentation.Augmentations(unlabeled_flip=1), 'augmentation.unlabeled_flip'),
    (lambda: semi_supervised.SemiSupervised.Settings(constraints=(fisher.Fisher(),),
                                                     lambda_ce=-1.0), 'ssl.lambda_ce'),
    (lambda: semi_supervised.SemiSupervised.Settings(), 'the critic has no constraint'),
    (lambda: fisher.Fisher(penalty_weight=-1.0), 'Fisher.penalty_weight'),
    (lambda: fisher.Fisher(component='g'), 'g'),
])
def test_each_settings_group_refuses_a_bad_value_when_made(make, message):
  """A group of settings exists only valid: each checks itself when made (so a RunConfig,
  made of them, is valid before any data is read or file written)."""
  with pytest.raises(errors.ConfigError, match=re.escape(message)):
    make()


def test_a_bad_builder_setting_from_gin_is_refused_by_the_run_configuration():
  gin.clear_config()
  try:
    gin.parse_config(['train.steps = 2', 'ssl.constraints = [@Fisher()]',
                      'build_critic.width = 0'])
    with pytest.raises(errors.ConfigError,
                       match=r'^build_critic\.width must be a number > 0\.0, got 0$'):
      configurables.run_config()
  finally:
    gin.clear_config()


@pytest.mark.parametrize('arguments,message', [
    ({}, 'RunConfig.create needs a training length (steps=, epochs= or critic_updates=) and '
     "the critic's constraints (settings=, with fisher from tf_ipmssl.objectives): e.g. "
     "RunConfig.create(steps=100, settings={'constraints': [fisher.Fisher()]}, ...)"),
    ({'steps': 10}, "RunConfig.create needs the critic's constraints (settings=, with fisher "
     "from tf_ipmssl.objectives): e.g. RunConfig.create(settings={'constraints': "
     "[fisher.Fisher()]}, ...)"),
    ({'mode': 'supervised'}, 'RunConfig.create needs a training length (steps=, epochs= or '
     'critic_updates=): e.g. RunConfig.create(steps=100, ...)'),
])
def test_create_names_the_settings_without_a_default_that_trains_in_its_own_terms(
    arguments, message):
  """create() with its defaults was refused by the checks in gin's words (`train.epochs`,
  `ssl.constraints = [@Fisher()]`); it names its own keywords, and the call it suggests is
  accepted."""
  with pytest.raises(errors.ConfigError) as raised:
    run_config.RunConfig.create(**arguments)
  assert str(raised.value) == message
  completed = {'steps': 100, **arguments}
  if 'mode' not in arguments:
    completed['settings'] = {'constraints': [fisher.Fisher()]}
  assert run_config.RunConfig.create(**completed).train.steps == completed['steps']
