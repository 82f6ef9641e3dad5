"""Report tables and JSON from fake timings (no TensorFlow computation)."""
import json

import pytest

from tf_ipmssl.benchmark import configs
from tf_ipmssl.benchmark import report
from tf_ipmssl.benchmark import timing

BASE = configs.Variant()
XLA = configs.Variant(jit_compile=True)


def _t(*samples, derived=''):
  return timing.Timing(samples, derived=derived)


def _ssl(name, iteration, generator, n_c=2, variant=BASE, gflop=450.0):
  critic = _t(*[i - generator for i in iteration], derived='difference')
  own = _t(*[n_c * i - (n_c - 1) * generator for i in iteration], derived='formula')
  count = {'executed': gflop * 1e9, 'required': gflop * 1e9}
  return report.Result(
      config=name, kind=configs.SSL, description=name, variant=variant,
      critic_iterations=n_c,
      timings={'critic_step': critic, 'generator_step': _t(generator, generator, generator),
               'iteration_1': _t(*iteration), 'iteration_nc': own},
      flops={'critic_step': count, 'generator_step': count, 'iteration_1': count,
             'iteration_nc': {k: 2 * v for k, v in count.items()}},
      images_per_call={'critic_step': 64, 'generator_step': 64, 'iteration_1': 64,
                       'iteration_nc': 64 * n_c})


def _run():
  results = [
      _ssl('fisher', (4.0, 5.0, 6.0), 1.0),                      # 450 GFLOP in 5 s: 90 GFLOP/s
      _ssl('fisher_sobolev', (7.0, 8.0, 9.0), 1.0, gflop=798.0),
      _ssl('fisher_ln', (6.0, 6.0, 6.0), 1.0),
      _ssl('fisher', (10.0, 10.0, 10.0), 2.0, variant=XLA),
      report.Result('eval', configs.EVAL, 'eval', BASE, 1, {'forward': _t(2.0, 1.5, 3.0)},
                    {'forward': {'executed': 156e9, 'required': 156e9}}, {'forward': 256}),
      report.Result('pipeline', configs.PIPELINE, 'pipeline', BASE, 1,
                    {'batch': _t(0.01, 0.01, 0.01)}, {}, {'batch': 64}),
  ]
  matmul = {'size': 1000, 'timing': _t(0.02, 0.025, 0.0125)}  # 100 GFLOP/s [80-160]
  machine = {'cpu_model': 'Fake CPU', 'logical_cpus': 2, 'gpus': [], 'tensorflow': '2.x',
             'keras': '3.x', 'load_average_start': [1.0, 0.5, 0.25],
             'load_average_end': [2.0, 1.0, 0.5]}
  settings = {'width': 1.0, 'batch_size': 64, 'eval_batch_size': 256, 'warmup': 1,
              'repeats': 3}
  return report.BenchmarkRun(settings, machine, matmul, results, command='bin/benchmark',
                             wall_seconds=123.0)


def test_timing_statistics_and_paired_differences():
  t = _t(3.0, 1.0, 2.0, 10.0)
  assert (t.median, t.min, t.max) == (2.5, 1.0, 10.0)
  d = timing.paired([_t(5.0, 6.0), _t(1.0, 3.0)], [2, -1], derived='2a - b')
  assert d.samples == (9.0, 9.0) and d.derived == '2a - b'
  with pytest.raises(ValueError):
    timing.paired([_t(1.0), _t(1.0, 2.0)], [1, 1], derived='x')


def test_rates():
  run = _run()
  assert run.matmul_gflops == pytest.approx(100.0)
  fisher = run.results[0]
  assert fisher.gflops_per_second('iteration_1') == pytest.approx(90.0)
  assert fisher.images_per_second('iteration_nc') == pytest.approx(128 / 9.0)
  evaluation = run.results[4]
  assert evaluation.gflops_per_second('forward') == pytest.approx(78.0)
  assert evaluation.images_per_second('forward') == pytest.approx(128.0)
  assert run.results[1].gflops_per_second('iteration_1') == pytest.approx(99.75)
  assert run.results[3].gflops_per_second('iteration_1') == pytest.approx(45.0)


def test_text_report():
  text = report.format_run(_run())
  assert 'Fake CPU, 2 logical CPUs' in text
  assert 'load average: start 1.00 / 0.50 / 0.25' in text
  assert 'dense fp32 matmul 1000x1000x1000: 100.0 GFLOP/s [80-160]' in text
  assert '5 [4-6]' in text           # fisher iteration, median [min-max]
  assert '4 [3-5]*' in text          # its critic step, derived (starred)
  assert '100 batches/s' in text
  assert 'target' not in text.lower() and 'issue' not in text.lower()
  lines = text.splitlines()
  header = next(i for i, l in enumerate(lines) if l.startswith('config  ') and 'n_c' in l)
  assert lines[header + 2].split()[:3] == ['fisher', BASE.label, '2']
  # The numbers the targets of docs/performance.md are ratios of: GFLOP/s and matmul share.
  assert lines[header + 2].split()[-2:] == ['90.0', '90%']
  eval_row = next(l for l in lines if l.startswith('eval '))
  assert eval_row.split()[-2:] == ['78.0', '78%']


def test_json_round_trip(tmp_path):
  run = _run()
  path = tmp_path / 'out.json'
  report.write_json(run, path)
  data = json.loads(path.read_text())
  assert data['matmul']['gflops_per_second'] == pytest.approx(100.0)
  assert data['results'][0]['timings_seconds']['iteration_1']['median'] == 5.0
  assert data['results'][0]['timings_seconds']['critic_step']['derived'] == 'difference'
  assert data['results'][0]['rates']['iteration_1']['fraction_of_matmul'] == pytest.approx(0.9)
  assert data['format_version'] == 2 and 'targets' not in data
  again = report.BenchmarkRun.from_json(data)
  assert again.results[0].timings == run.results[0].timings
  assert again.results[3].variant == XLA
  assert report.format_run(again) == report.format_run(run)
