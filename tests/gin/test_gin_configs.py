"""Every gin file under gin/ parses, builds its networks and trains on tiny fake data.

Runs in-process (gin.clear_config, configurables.parse, trainer.train) with tf.functions
run eagerly: for one or two steps, tracing would cost more than the steps themselves. Each
paper cell is also checked against its expected configuration (tests/gin/expected.py),
derived independently from the paper, before the tiny-run overrides are applied.

The trainer's input is the run configuration (configurables.run_config) alone, so files that
give the same configuration under the tiny-run overrides (a table's cell that another table
repeats, Appendix A's label counts, which the overrides set to 20) train one run: the first
trains it, the others check their configuration equal to it and the run's files against
their own bindings (103 runs for 140 files).
"""
import json
import os
import pathlib
import time

import gin
import pytest
import tensorflow as tf

from tests import fixtures
from tests import gin_queries
from tests.gin import expected
from tf_ipmssl import cells as cells_lib
from tf_ipmssl import configurables
from tf_ipmssl.data import dataset_specs
from tf_ipmssl.data import datasets
from tf_ipmssl.data import folder_writer
from tf_ipmssl.objectives import formulations
from tf_ipmssl.training import trainer

GIN_DIR = cells_lib.GIN_DIR
GIN_FILES = sorted(str(p.relative_to(GIN_DIR)) for p in GIN_DIR.rglob('*.gin'))
DATASETS = dataset_specs.names()
# Files that are not complete configurations are trained together with a context.
BASE_CONTEXT = ('bases/ssl.gin',)
PRESET_CONTEXT = ('table1/cifar10_fisher_kplus1.gin',)
_TIMES = {}
# {the configuration's JSON: its run's model dir}, the runs trained by this module.
_TRAINED = {}

# tf.data functions stay graphs under run_functions_eagerly, and TF says so every run.
pytestmark = pytest.mark.filterwarnings('ignore:Even though the')


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  directory = tmp_path_factory.mktemp('data')
  for name in DATASETS:
    fixtures.make_fake_dataset(str(directory), name, num_train=80, num_test=20)
  # bases/image_folder.gin's folder: the fake Fashion-MNIST as PNG files.
  folder_writer.write_image_folder(
      str(directory / dataset_specs.IMAGE_FOLDER),
      datasets.load_dataset('fashion_mnist', source='local', data_dir=str(directory)),
      labeled_per_class=2, validation_size=20)
  return str(directory)


@pytest.fixture(scope='module', autouse=True)
def eager_functions():
  tf.config.run_functions_eagerly(True)
  yield
  tf.config.run_functions_eagerly(False)
  gin.clear_config()
  if _TIMES:
    print(f'\n{len(_TIMES)} gin files checked, {len(_TRAINED)} runs trained, in '
          f'{sum(_TIMES.values()):.0f} s '
          f'(slowest: {max(_TIMES, key=_TIMES.get)}, {max(_TIMES.values()):.1f} s)')


def _files_for(name):
  """The gin files (absolute) to parse to train `name` (a path relative to gin/)."""
  if name.startswith('bases/'):
    files = BASE_CONTEXT + (name,)
  elif name.startswith('presets/'):
    files = PRESET_CONTEXT + (name,)
  else:
    files = (name,)
  return [str(GIN_DIR / f) for f in dict.fromkeys(files)]


def _tiny_bindings(data_dir, num_labeled):
  """Small enough to train in about a second; keeps the config's constraints and dataset."""
  bindings = {
      'build_ssl_data.source': "'local'",
      'build_ssl_data.data_dir': repr(data_dir),
      'build_ssl_data.num_labeled': 'None' if num_labeled is None else '20',
      'build_ssl_data.validation_size': '20',
      'build_ssl_data.max_test_examples': 'None',
      'build_critic.width': '0.0625',
      'build_generator.ngf': '4',
      'train.batch_size': '16',
      'train.steps': '1',
      # One critic update per step (the cell's n_c was checked before): WGAN cells have 5.
      'ssl.critic_iterations': '1',
      'train.log_every': '1',
      'train.eval_every': '1000',
      'train.checkpoint_every': '1000',
      'train.sample_every': '1000',
      'train.export_classifier': 'False',
  }
  return [f'{k} = {v}' for k, v in bindings.items()]


def _constraints():
  """{kind: component} of the bound ssl.constraints."""
  references = gin_queries.bound_value('ssl.constraints', [])
  built = [reference.scoped_configurable_fn() for reference in references]
  return {c.kind: c.component for c in built}


def _check_cell_config(cell):
  for name, value in expected.bindings(cell).items():
    bound = gin_queries.bound_value(name)
    if isinstance(value, float):
      assert bound == pytest.approx(value), (name, bound, value)
    else:
      assert bound == value, (name, bound, value)
  assert _constraints() == expected.constraints(cell)
  # What the run gets, bound or defaulted (an unbound setting reads None above).
  train = configurables.run_config().train
  for name, value in expected.optimizer(cell).items():
    assert getattr(train, name) == value, (name, getattr(train, name), value)


def test_every_gin_file_is_tested():
  assert len(GIN_FILES) >= len(cells_lib.all_cells()) + 5
  assert 'cifar_fisher_ln.gin' in GIN_FILES and 'presets/cpu_quick.gin' in GIN_FILES


@pytest.mark.parametrize('name', GIN_FILES)
def test_gin_file_trains(name, data_dir, tmp_path):
  started = time.time()
  files = _files_for(name)
  gin.clear_config()
  configurables.parse(files, [])
  if name.split('/')[0] in cells_lib.TABLES:
    _check_cell_config(cells_lib.get_cell(name))
  if name == 'presets/cpu_quick.gin':  # Parsed after a CIFAR-10 cell: its bindings win.
    assert gin_queries.bound_value('build_ssl_data.dataset') == 'fashion_mnist'
    assert gin_queries.bound_value('build_ssl_data.num_labeled') == 1000
    assert gin_queries.bound_value('build_critic.width') == 0.25
    assert gin_queries.bound_value('train.steps') <= 500
  mode = gin_queries.bound_value('train.mode', 'ssl')
  # A base without constraints is trained with Fisher on f.
  add_constraint = mode == 'ssl' and not gin_queries.bound_value('ssl.constraints')
  constraints = {'fisher': 'f'} if add_constraint else _constraints()
  dataset = gin_queries.bound_value('build_ssl_data.dataset') or 'fashion_mnist'
  num_labeled = gin_queries.bound_value('build_ssl_data.num_labeled', 4000)
  normalization = gin_queries.bound_value('build_critic.normalization', 'none')
  formulation = gin_queries.bound_value('ssl.formulation', 'kplus1')

  bindings = _tiny_bindings(data_dir, num_labeled)
  bindings.append(f"build_ssl_data.dataset = '{dataset}'")
  if dataset == dataset_specs.IMAGE_FOLDER:  # Its labels are all given, in its own folders.
    bindings += [f"build_ssl_data.data_dir = '{data_dir}/{dataset}'",
                 "build_ssl_data.source = 'auto'", 'build_ssl_data.validation_size = 0']
  if add_constraint:
    bindings.append('ssl.constraints = [@Fisher()]')
  classes = gin_queries.bound_value('build_ssl_data.classes')
  if classes is not None:  # Class mismatch: labels a multiple of its classes, an unlabeled
    # set the tiny dataset holds.
    bindings += [f'build_ssl_data.num_labeled = {2 * len(classes)}',
                 'build_ssl_data.unlabeled_size = 40']
  gin.clear_config()
  configurables.parse(files, bindings)
  config = configurables.run_config()
  key = json.dumps(config.to_json(), sort_keys=True)
  model_dir = _TRAINED.get(key)
  if model_dir is None:
    model_dir = _TRAINED[key] = str(tmp_path / 'run')
    trainer.train(model_dir, config)
  else:  # The same configuration trained: its run's record holds this file's settings.
    assert json.loads(pathlib.Path(model_dir, 'run_config.json').read_text()) == (
        config.to_json())

  metrics = json.loads(pathlib.Path(model_dir, 'metrics.json').read_text())
  assert metrics['finished'] and metrics['step'] == 1
  assert metrics['final']['test_error'] is not None
  operative = pathlib.Path(model_dir, 'operative_config.gin').read_text()
  assert f"train.mode = '{mode}'" in operative
  assert f"build_critic.normalization = '{normalization}'" in operative
  dataset_record = json.loads(pathlib.Path(model_dir, 'dataset.json').read_text())
  assert dataset_record['name'] == dataset
  if mode == 'ssl':
    assert f"ssl.formulation = '{formulation}'" in operative
    for kind, component in constraints.items():
      name_in_config = {'fisher': 'Fisher', 'sobolev': 'Sobolev', 'gp': 'GradientPenalty',
                        'clip': 'WeightClipping'}[kind]
      assert f'@{name_in_config}()' in operative
      if kind != 'clip':  # Clipping acts on every weight; its component is always f.
        # As bound (an alias such as 'f-' is recorded as written).
        aliases = [a for a in ('f', 'f_pos', 'f+', 'f_neg', 'f-')
                   if formulations.canonical_component(a) == component]
        assert any(f"{name_in_config}.component = '{a}'" in operative for a in aliases)
  _TIMES[name] = time.time() - started
  assert os.path.isdir(os.path.join(model_dir, 'checkpoints'))
