"""bin/benchmark end to end at a tiny size (no assertion on any timing)."""
import functools
import importlib.machinery
import importlib.util
import json
import pathlib
import subprocess
import sys

from tests.training import runs

BENCHMARK = str(pathlib.Path(__file__).resolve().parents[2] / 'bin' / 'benchmark')


@functools.lru_cache(maxsize=None)
def _load_program():
  """bin/benchmark as a module, run in this process (TensorFlow is already imported); loaded
  once (its absl flags can be defined once per process)."""
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
  # A step is n_c critic updates and one generator update, in both counts (the counts
  # themselves: test_flops.py's hand counts).
  flops = fisher['flops']
  for kind in ('executed', 'required'):
    assert flops['critic_step'][kind] > 0 and flops['generator_step'][kind] > 0
    assert flops['iteration_1'][kind] == (flops['critic_step'][kind] +
                                          flops['generator_step'][kind])
    assert flops['iteration_nc'][kind] == (2 * flops['critic_step'][kind] +
                                           flops['generator_step'][kind])
  assert len(data['machine']['load_average_end']) == 3


def test_unknown_config_is_a_one_line_error_before_tensorflow_loads():
  result = subprocess.run([sys.executable, BENCHMARK, '--configs=fisher,nope'],
                          capture_output=True, text=True, timeout=120,
                          env=runs.environment(), cwd=str(runs.REPO_ROOT))
  assert result.returncode == 1
  assert 'Traceback' not in result.stderr
  assert "unknown benchmark config(s) ['nope']" in result.stderr


def test_image_sizes_time_each_size(tmp_path, capsys):
  out = tmp_path / 'bench.json'
  program = _load_program()
  argv = ['bin/benchmark', '--configs=eval', '--width=0.0625', '--eval_batch_size=2',
          '--repeats=1', '--warmup=0', '--matmul_size=64', '--image_sizes=32,96',
          f'--json_out={out}']
  program.FLAGS(argv)
  try:
    program.main(argv[:1])
  finally:
    program.FLAGS.unparse_flags()
  assert 'float32/noxla/batched/96px' in capsys.readouterr().out
  results = json.loads(out.read_text())['results']
  assert [r['variant']['image_size'] for r in results] == [32, 96]
  assert [r['variant_label'] for r in results] == ['float32/noxla/batched',
                                                   'float32/noxla/batched/96px']
  assert results[1]['flops']['forward']['executed'] > results[0]['flops']['forward'][
      'executed']


def test_a_bad_image_size_is_a_one_line_error_before_tensorflow_loads():
  result = subprocess.run([sys.executable, BENCHMARK, '--image_sizes=32,48'],
                          capture_output=True, text=True, timeout=120,
                          env=runs.environment(), cwd=str(runs.REPO_ROOT))
  assert result.returncode == 1 and 'Traceback' not in result.stderr
  assert '--image_sizes = 48 is not a size the networks are built for' in result.stderr


def test_the_export_config_times_every_runtime(tmp_path, capsys):
  """--configs=export times the SavedModel, onnxruntime and LiteRT (float and int8 weights)
  at batch 1 and the eval batch, and reports each model's size (tiny settings; no timing is
  checked)."""
  out = tmp_path / 'bench.json'
  program = _load_program()
  argv = ['bin/benchmark', '--configs=export', '--width=0.0625', '--eval_batch_size=3',
          '--repeats=1', '--warmup=0', '--matmul_size=64', f'--json_out={out}']
  program.FLAGS(argv)
  try:
    program.main(argv[:1])
  finally:
    program.FLAGS.unparse_flags()
  stdout = capsys.readouterr().out
  (export,) = json.loads(out.read_text())['results']
  formats = ('onnx', 'litert', 'litert_int8')
  assert set(export['timings_seconds']) == {
      f'{prefix}batch_{n}' for prefix in ('', *(f'{f}_' for f in formats)) for n in (1, 3)}
  assert export['images_per_call']['litert_int8_batch_3'] == 3
  sizes = export['file_bytes']
  assert set(sizes) == {'saved_model', *formats} and sizes['litert_int8'] < sizes['litert']
  for label in ('export ', 'export onnx ', 'export litert ', 'export litert_int8 '):
    assert label in stdout
  assert 'export [float32/noxla/batched] model size: saved_model ' in stdout
