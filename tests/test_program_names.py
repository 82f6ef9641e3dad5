"""Every name a program, script or module reads from a module of the package exists there:
`module.name` after `from tf_ipmssl.x import module` is checked against the imported module,
so a function moved to another module cannot leave a program behind that fails only when it
runs (the programs' own tests train first, and only some reach every line)."""
import ast
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _sources():
  programs = [path for path in (ROOT / 'bin').iterdir()
              if path.is_file() and path.read_text().startswith('#!/usr/bin/env python')]
  python = [path for folder in ('tf_ipmssl', 'studies', 'scripts', 'tests')
            for path in (ROOT / folder).rglob('*.py')]
  return sorted(programs + python)


def _module_aliases(tree):
  """{local name: dotted module} for every package module the source imports as a module."""
  aliases = {}
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module and not node.level \
        and node.module.startswith('tf_ipmssl'):
      for alias in node.names:
        full = f'{node.module}.{alias.name}'
        if importlib.util.find_spec(node.module) and _is_module(full):
          aliases[alias.asname or alias.name] = full
    elif isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith('tf_ipmssl.') and alias.asname:
          aliases[alias.asname] = alias.name
  return aliases


def _is_module(dotted):
  try:
    return importlib.util.find_spec(dotted) is not None
  except ModuleNotFoundError:
    return False


def _missing_names(path):
  tree = ast.parse(path.read_text())
  aliases = _module_aliases(tree)
  assigned = {target.id for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.For))
              for target in ast.walk(node.targets[0] if isinstance(node, ast.Assign)
                                     else node.target) if isinstance(target, ast.Name)}
  missing = []
  for node in ast.walk(tree):
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        and node.value.id in aliases and node.value.id not in assigned
        and isinstance(node.ctx, ast.Load)):
      module = importlib.import_module(aliases[node.value.id])
      if not hasattr(module, node.attr):
        missing.append(f'{path.relative_to(ROOT)}:{node.lineno}: '
                       f'{aliases[node.value.id]} has no {node.attr}')
  return missing


def test_every_module_name_a_source_reads_exists():
  missing = [line for path in _sources() for line in _missing_names(path)]
  assert not missing, '\n'.join(missing)


def test_a_moved_name_is_found(tmp_path):
  """The check itself: a program reading a name its module no longer has is reported."""
  program = tmp_path / 'program'
  program.write_text('from tf_ipmssl.training import tensorboard\n'
                     'tensorboard.read_scalars("x")\ntensorboard.write_scalars\n')
  global ROOT  # pylint: disable=global-statement
  saved, ROOT = ROOT, tmp_path
  try:
    assert _missing_names(program) == [
        'program:2: tf_ipmssl.training.tensorboard has no read_scalars']
  finally:
    ROOT = saved


if __name__ == '__main__':
  pytest.main([__file__])
