"""A finished run's hyperparameters and metrics, as a real TensorBoard's HParams dashboard
serves them: a TensorBoard on localhost over a root of two runs lists both with their values."""
import json
import os
import shutil
import time
import urllib.request

import pytest

from tests import local_server
from tests.training import runs
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.training import tensorboard


@pytest.fixture(scope='module')
def sweep_root(tmp_path_factory):
  """ROOT/cell/seed_0 trained by bin/train; ROOT/cell/seed_1 its records with seed 1, its
  hparams/ written from them."""
  root = tmp_path_factory.mktemp('root')
  trained = str(root / 'cell' / 'seed_0')
  runs.copy_of_shared_run(tmp_path_factory, trained)
  copied = str(root / 'cell' / 'seed_1')
  os.makedirs(copied)
  for name in (run_files.VERSIONS_FILE, run_files.METRICS_FILE):
    shutil.copy(os.path.join(trained, name), copied)
  run_config = run_files.read_json(trained, run_files.RUN_CONFIG_FILE)
  run_config['train']['seed'] = 1
  run_files.write_json(copied, run_files.RUN_CONFIG_FILE, run_config)
  tensorboard.write_run(copied)
  return str(root)


def test_cell_and_preset_from_gin_files():
  assert tensorboard.cell_and_preset(['gin/table1/cifar10_fisher_kplus1.gin',
                                      '/x/gin/presets/cpu_fashion_mnist_100.gin']) == (
                                          'table1/cifar10_fisher_kplus1',
                                          'presets/cpu_fashion_mnist_100')
  assert tensorboard.cell_and_preset([]) == ('', '')


def test_values_a_run_leaves_unbound_are_the_builders_defaults():
  config = {'objective': {'algorithm': 'ssl', 'formulation': 'kplus1', 'lambda_ce': 1.5,
                          'constraints': [{'type': 'Sobolev', 'component': 'f_neg'},
                                          {'type': 'GradientPenalty', 'component': 'f'}]},
            'numerics': {'seed': 3}, 'loop': {'critic_iterations': 2}, 'optimizers': {}}
  values = tensorboard.hparams_of(config, ['gin/table2/cifar10_sobolev_fneg.gin'])
  # A record of format version 1: its semi-supervised fields are the ssl settings.
  assert values['ssl.formulation'] == 'kplus1' and values['ssl.lambda_ce'] == 1.5
  assert values['ssl.critic_iterations'] == 2
  assert values['labels'] == 4000 and values['split_seed'] == 0
  assert values['normalization'] == 'none' and values['width'] == 1.0
  assert values['constraints'] == 'Sobolev(f_neg) + GradientPenalty(f)'
  assert values['ipm'] == 'Sobolev + WGAN-GP'
  assert values['cell'] == 'table2/cifar10_sobolev_fneg' and values['seed'] == 3
  assert tensorboard.trial_id(values) == 'table2/cifar10_sobolev_fneg/seed_3'


def test_the_trainer_writes_the_session(sweep_root):
  listing = os.listdir(os.path.join(sweep_root, 'cell', 'seed_0', run_files.HPARAMS_DIR))
  assert len(listing) == 1 and 'tfevents' in listing[0]


def _post(url, body):
  request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                   headers={'Content-Type': 'application/json'})
  with urllib.request.urlopen(request, timeout=10) as response:
    return json.loads(response.read())


def _session_groups(url, deadline=90):
  """The HParams plugin's session groups, once it lists two (it loads the logdir at start)."""
  request = {'startIndex': 0, 'sliceSize': 100,
             'allowedStatuses': ['STATUS_UNKNOWN', 'STATUS_SUCCESS', 'STATUS_FAILURE',
                                 'STATUS_RUNNING']}
  end = time.time() + deadline
  while True:
    try:
      groups = _post(url + '/data/plugin/hparams/session_groups', request)
      if groups.get('totalSize', 0) >= 2 or time.time() > end:
        return groups
    except OSError:  # Not listening yet.
      if time.time() > end:
        raise
    time.sleep(1)


def test_tensorboard_lists_the_runs_with_their_values(sweep_root):
  trained = run_files.read_json(os.path.join(sweep_root, 'cell', 'seed_0'),
                                run_files.METRICS_FILE)
  with local_server.tensorboard(sweep_root, '--reload_interval=1') as url:
    groups = _session_groups(url)
    experiment = _post(url + '/data/plugin/hparams/experiment', {'experimentName': ''})
  columns = {h['name'] for h in experiment['hparamInfos']}
  assert columns == {name for name, _ in tensorboard.columns()}
  # The general columns, and every single-valued setting of the library's algorithms.
  assert columns == {name for name, _ in tensorboard.HPARAMS} | {
      'ssl.formulation', 'ssl.lambda_ce', 'ssl.reference_pairwise_f', 'ssl.critic_iterations',
      'ssl.generator_loss', 'ssl.ipm_rampup_updates', 'ssl.constraint_penalty_scale'}
  assert {m['name']['tag'] for m in experiment['metricInfos']} == {
      name for name, _ in tensorboard.METRICS}
  sessions = {}
  for group in groups['sessionGroups']:
    (session,) = group['sessions']
    sessions[session['name']] = (group['hparams'], {
        m['name']['tag']: m['value'] for m in session['metricValues']})
  assert set(sessions) == {'cell/seed_0/hparams', 'cell/seed_1/hparams'}
  for name, seed in (('cell/seed_0/hparams', 0), ('cell/seed_1/hparams', 1)):
    values, metrics = sessions[name]
    assert values['seed'] == seed
    assert values['cell'] == 'bases/ssl' and values['preset'] == ''
    assert values['constraints'] == 'Fisher(f)' and values['ipm'] == 'Fisher'
    assert values['labels'] == 20 and values['algorithm'] == 'ssl'
    assert values['ssl.formulation'] == 'kplus1' and values['ssl.lambda_ce'] == 1.5
    assert values['ssl.critic_iterations'] == 2 and 'ssl.ipm_rampup_updates' not in values
    assert metrics['test_error'] == pytest.approx(trained['best']['test_error'])
    assert metrics['steps'] == trained['step']
  # The balanced error: metrics.json's at the best step.
  assert sessions['cell/seed_0/hparams'][1]['test_balanced_error'] == pytest.approx(
      trained['best']['test_balanced_error'])
