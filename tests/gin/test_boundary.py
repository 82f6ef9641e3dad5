"""The gin boundary is one module: the data, networks, objectives and the distribution
strategy do not import gin, and the builders and constraint classes are plain (a gin
binding reaches them only through the run configuration read at a program's boundary)."""
import ast
import json
import dataclasses
import subprocess
import sys

import gin
import pytest

from tests.training import runs
from tf_ipmssl import builder_settings
from tf_ipmssl import configurables
from tf_ipmssl import errors
from tf_ipmssl.networks import critic as critic_lib
from tf_ipmssl.objectives import fisher

PLAIN = ('tf_ipmssl/data', 'tf_ipmssl/networks', 'tf_ipmssl/objectives',
         'tf_ipmssl/training/distribution.py', 'tf_ipmssl/builder_settings.py')


def _imports(path):
  names = set()
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      names |= {alias.name for alias in node.names}
    elif isinstance(node, ast.ImportFrom):
      names |= {f'{node.module}.{alias.name}' for alias in node.names} | {node.module}
  return names


def test_plain_modules_do_not_import_gin():
  paths = []
  for name in PLAIN:
    root = runs.REPO_ROOT / name
    paths += sorted(root.rglob('*.py')) if root.is_dir() else [root]
  assert len(paths) > 10
  ginful = {path.relative_to(runs.REPO_ROOT).as_posix() for path in paths
            if {'gin', 'tf_ipmssl.configurables'} & _imports(path)}
  assert ginful == set()


def test_gin_is_imported_by_one_module_of_the_package():
  package = runs.REPO_ROOT / 'tf_ipmssl'
  importers = {path.relative_to(runs.REPO_ROOT).as_posix()
               for path in sorted(package.rglob('*.py'))
               if any(name == 'gin' or name.startswith('gin.') for name in _imports(path))}
  assert 'tf_ipmssl/configurables.py' in importers
  assert importers == {'tf_ipmssl/configurables.py'}


def test_plain_modules_import_without_gin_registering_anything():
  """Importing the library's modules, run_config included, registers no gin name: only
  configurables does."""
  code = ('import gin\n'
          'from tf_ipmssl.training import run_config, run\n'
          'for name in ("train", "build_critic", "build_ssl_data", "make_strategy", "Fisher"):\n'
          '  try:\n'
          '    gin.get_configurable(name)\n'
          '    print("registered", name)\n'
          '  except ValueError:\n'
          '    pass\n'
          'from tf_ipmssl import configurables\n'
          'print(gin.get_configurable("Fisher").__name__, gin.get_configurable("build_critic").__name__)\n')
  result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=300, env=runs.environment(), cwd=str(runs.REPO_ROOT))
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.split() == ['Fisher', 'build_critic']


def test_bindings_reach_the_run_configuration_not_the_classes():
  gin.clear_config()
  try:
    gin.parse_config(['Fisher.penalty_weight = 0.5', 'build_critic.width = 0.25'])
    assert gin.get_configurable('Fisher')().penalty_weight == 0.5
    assert configurables.bound(critic_lib.GROUP)['width'] == 0.25
    assert fisher.Fisher().penalty_weight == 1e-7
    # The builder ignores gin: width 1.0, Φ of 4·4·384.
    critic = critic_lib.build_critic(critic_lib.BuildCritic(), 10, 1)
    assert critic.s_head.kernel.shape[0] == 4 * 4 * 384
  finally:
    gin.clear_config()


def test_an_unbound_required_setting_is_a_config_error_naming_the_binding():
  @dataclasses.dataclass(frozen=True)
  class Needs:
    size: int
    scale: float = 2.0

  settings = builder_settings.Group.of_dataclass('test_needs_size', Needs)
  configurables.register(settings)
  gin.clear_config()
  try:
    with pytest.raises(errors.ConfigError, match=r'^bind test_needs_size\.size$'):
      configurables.bound(settings)
    gin.parse_config(['test_needs_size.size = 3'])
    assert dict(configurables.bound(settings)) == {'size': 3, 'scale': 2.0}
  finally:
    gin.clear_config()


_USER_CONFIGURABLES = '''
import gin
from tf_ipmssl import configurables

@gin.configurable('train')
def train(x=1):
  return x

@gin.configurable('Fisher')
class Fisher:
  def __init__(self, y=2):
    self.y = y
'''


def _parse_quickstart(user_code):
  """The quickstart's run configuration and gin text, in a fresh process with `user_code`
  run first; with a binding of each user configurable if it is there."""
  code = user_code + '''
import json, sys
bindings = ['train.steps = 5', 'ssl.constraints = [@Fisher()]']
if 'def train' in sys.argv[1]:
  bindings += ['__main__.train.x = 3', '__main__.Fisher.y = 4']
configurables.parse(['gin/quickstart.gin'], bindings)
config = configurables.run_config()
mine = [train(), Fisher().y] if 'def train' in sys.argv[1] else []
print(json.dumps([config.train.steps,
                  type(config.algorithm_settings.constraints[0]).__module__,
                  config.gin_text, config.operative_gin_text, mine]))
'''
  result = subprocess.run([sys.executable, '-c', code, user_code], capture_output=True,
                          text=True, cwd=str(runs.REPO_ROOT), env=runs.environment(),
                          timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.splitlines()[-1])


def test_a_users_configurable_of_the_same_name_leaves_the_librarys_names_as_they_are():
  """A user's own @gin.configurable('train') (and 'Fisher') beside the library's: gin
  found both under `train` ('Ambiguous selector'); the library's names are complete
  selectors, so `train.steps` and `@Fisher()` stay the library's, the user's are bound
  under their module, and the configuration and its gin text are those of a process
  without them, the user's own sections aside."""
  steps, fisher_module, text, operative, mine = _parse_quickstart(
      _USER_CONFIGURABLES)
  alone = _parse_quickstart('from tf_ipmssl import configurables\n')
  assert (steps, fisher_module) == (5, fisher.Fisher.__module__)
  assert mine == [3, 4]
  assert [steps, fisher_module] == alone[:2]
  for with_user, without in ((text, alone[2]), (operative, alone[3])):
    sections = with_user.split('\n\n')
    assert [s for s in sections if '__main__' not in s] == without.split('\n\n')
