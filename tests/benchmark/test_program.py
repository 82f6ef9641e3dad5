"""bin/benchmark end to end at a tiny size (no assertion on any timing)."""
import importlib.machinery
import importlib.util
import json
import pathlib
import subprocess
import sys

from tests.training import runs

BENCHMARK = str(pathlib.Path(__file__).resolve().parents[2] / 'bin' / 'benchmark')


def _load_program():
  """bin/benchmark as a module, run in this process (TensorFlow is already imported)."""
  loader = importlib.machinery.SourceFileLoader('bin_benchmark', BENCHMARK)
  spec = importlib.util.spec_from_loader('bin_benchmark', loader)
  module = importlib.util.module_from_spec(spec)
  loader.exec_module(module)
  return module


def test_tiny_run_prints_tables_and_writes_json(tmp_path, capsys):
  out = tmp_path / 'bench.json'
  program = _load_program()
  argv = ['bin/benchmark', '--configs=fisher', '--width=0.0625', '--batch_size=4',
          '--repeats=1', '--warmup=0', '--matmul_size=64', f'--json_out={out}']
  program.FLAGS(argv)
  try:
    program.main(argv[:1])
  finally:
    program.FLAGS.unparse_flags()
  stdout = capsys.readouterr().out
  assert 'load average at start' in stdout and 'load average at end' in stdout
  assert 'Training (seconds per call' in stdout
  assert 'Targets' not in stdout
  data = json.loads(out.read_text())
  assert data['format_version'] == 2 and 'targets' not in data
  assert data['settings']['width'] == 0.0625
  (fisher,) = data['results']
  assert fisher['config'] == 'fisher' and fisher['critic_iterations'] == 2
  assert set(fisher['timings_seconds']) == {'critic_step', 'generator_step', 'iteration_1',
                                            'iteration_nc'}
  assert fisher['flops']['iteration_nc']['executed'] > fisher['flops']['iteration_1'][
      'executed'] > 0
  assert len(data['machine']['load_average_end']) == 3


def test_unknown_config_is_a_one_line_error_before_tensorflow_loads():
  result = subprocess.run([sys.executable, BENCHMARK, '--configs=fisher,nope'],
                          capture_output=True, text=True, timeout=120,
                          env=runs.environment(), cwd=str(runs.REPO_ROOT))
  assert result.returncode == 1
  assert 'Traceback' not in result.stderr
  assert "unknown benchmark config(s) ['nope']" in result.stderr
