"""The package's import graph, read from its source: no module imports, at any depth of its
code, one of a higher layer (LAYERS, lowest first), and the imports that run when a module is
imported form no cycle."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / 'tf_ipmssl'

# Each top-level module or folder of the package by layer, lowest first: a module may import
# its own layer's and lower ones'.
LAYERS = (
    {'__init__', 'version', 'errors', 'registry', 'builder_settings', 'fault_injection',
     'quiet_import'},
    {'data'},
    {'networks', 'objectives', 'run_dir', 'cells', 'table_file'},
    {'serving'},
    {'training'},
    {'library', 'configurables', 'process_state', 'diagnosis', 'sweep', 'benchmark'},
    {'api', 'api_results', 'command_line', 'programs'},
)


def _modules():
  """{dotted name: path} of every module of the package."""
  modules = {}
  for path in PACKAGE.rglob('*.py'):
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    modules['.'.join(parts[:-1] if parts[-1] == '__init__' else parts)] = path
  return modules


MODULES = _modules()


def _imports(path, top_level_only):
  """The package's modules `path` imports (at its top level only, or anywhere)."""
  tree = ast.parse(path.read_text())
  nodes = tree.body if top_level_only else list(ast.walk(tree))
  found = set()
  for node in nodes:
    if isinstance(node, ast.Import):
      found |= {alias.name for alias in node.names}
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      for alias in node.names:
        full = f'{node.module}.{alias.name}'
        found.add(full if full in MODULES else node.module)
  return {name for name in found if name in MODULES}


def _part(module):
  """The top-level module or folder of the package that `module` lies in."""
  parts = module.split('.')
  return parts[1] if len(parts) > 1 else '__init__'


def _layer(module):
  return next(i for i, layer in enumerate(LAYERS) if _part(module) in layer)


def test_every_part_of_the_package_has_a_layer():
  parts = {_part(m) for m in MODULES}
  assert parts == set().union(*LAYERS)


def test_no_module_imports_a_higher_layer():
  upward = sorted((m, t) for m, path in MODULES.items()
                  for t in _imports(path, top_level_only=False) if _layer(t) > _layer(m))
  assert upward == []


def _cycles(graph):
  """The import cycles of `graph` ({module: the modules it imports}), each as a path."""
  done, active, cycles = set(), [], []

  def visit(module):
    if module in active:
      cycles.append(active[active.index(module):] + [module])
      return
    if module in done:
      return
    active.append(module)
    for target in sorted(graph.get(module, ())):
      visit(target)
    active.pop()
    done.add(module)

  for module in sorted(graph):
    visit(module)
  return cycles


def test_the_imports_at_import_time_have_no_cycle():
  graph = {m: _imports(path, top_level_only=True) - {m} for m, path in MODULES.items()}
  assert _cycles(graph) == []


def test_the_checks_on_known_answers():
  """A cycle is found; the graph reader sees trainer's import of serving (downward), and
  the layers put the API above training above serving above data."""
  assert _cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == [['a', 'b', 'c', 'a']]
  assert _cycles({'a': {'b'}, 'b': set()}) == []
  trainer = MODULES['tf_ipmssl.training.trainer']
  assert 'tf_ipmssl.serving.export' in _imports(trainer, top_level_only=False)
  assert _layer('tf_ipmssl.api') > _layer('tf_ipmssl.training.trainer') > _layer(
      'tf_ipmssl.serving.export') > _layer('tf_ipmssl.data.ssl_data')


STUDIES = PACKAGE.parent / 'studies'
# What only a study names: its pages and records, its label splits and training commits.
STUDY_NAMES = ('docs/results', '_records', 'studies.', 'studies/', 'bbbb1c3', 'c5b46ca',
               'step900', 'confirmation', 'fashion_mnist_study', 'fashion_mnist_ssl',
               'user_data')


def test_the_library_imports_no_study():
  """No module of the package imports a study's module, at any depth of its code."""
  for name, path in MODULES.items():
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
      imported = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                  [node.module or ''] if isinstance(node, ast.ImportFrom) else [])
      assert not any(i == 'studies' or i.startswith('studies.') for i in imported), name


def test_the_library_names_no_study():
  """No module of the package names a results page, a record folder or a study's readings;
  the studies' modules are outside it."""
  assert STUDIES.is_dir() and not (PACKAGE / 'sweep' / 'paper_pages.py').exists()
  for name, path in MODULES.items():
    text = path.read_text()
    found = [word for word in STUDY_NAMES if word in text]
    assert not found, f'{name} names {found}'
