"""The CPU record: its signature (the fingerprints' key) and what versions.json holds."""
import re
import subprocess
import sys

import tensorflow as tf

from tf_ipmssl.run_dir import cpu_info
from tf_ipmssl.run_dir import run_record

_AVX2 = {'vendor_id': 'AuthenticAMD', 'cpu family': '25', 'model': '1',
         'model name': 'AMD EPYC 7B13', 'flags': 'fpu sse avx avx2 fma'}
_AVX512 = {'vendor_id': 'GenuineIntel', 'cpu family': '6', 'model': '207',
           'model name': 'Intel(R) Xeon(R) Processor',
           'flags': 'fpu avx2 avx512f avx512_bf16 amx_tile'}


def test_signature_names_an_avx512_cpu_only():
  assert cpu_info.signature(_AVX2, {}) == f'no-avx512f tensorflow-{tf.__version__}'
  assert cpu_info.signature(_AVX512, {}) == (
      f'avx512f GenuineIntel-6-207 tensorflow-{tf.__version__}')


def test_signature_names_a_onednn_instruction_set_limit():
  assert cpu_info.signature(_AVX512, {'ONEDNN_MAX_CPU_ISA': 'avx2'}) == (
      f'avx512f GenuineIntel-6-207 onednn-max-isa=AVX2 tensorflow-{tf.__version__}')
  assert cpu_info.signature(_AVX2, {'DNNL_MAX_CPU_ISA': 'SSE41', 'ONEDNN_MAX_CPU_ISA': ''}) == (
      f'no-avx512f onednn-max-isa=SSE41 tensorflow-{tf.__version__}')


def test_cpuinfo_reads_the_first_processor(tmp_path):
  path = tmp_path / 'cpuinfo'
  path.write_text('processor\t: 0\nmodel name\t: First CPU\nflags\t\t: a avx512f\n\n'
                  'processor\t: 1\nmodel name\t: Second CPU\n')
  info = cpu_info.cpuinfo(str(path))
  assert info['model name'] == 'First CPU' and info['flags'] == 'a avx512f'
  assert cpu_info.cpuinfo(str(tmp_path / 'missing')) == {}


def test_versions_record_this_cpu():
  """The record's CPU read here another way: /proc/cpuinfo's first 'model name' and 'flags'
  lines by regular expression."""
  recorded = run_record._numerics(summation_order_fixed=True)['cpu']  # pylint: disable=protected-access
  with open('/proc/cpuinfo') as f:
    text = f.read()
  model = re.search(r'^model name\s*:\s*(.*?)\s*$', text, re.M)
  flags = re.search(r'^flags\s*:(.*)$', text, re.M)
  assert recorded['model_name'] == (model.group(1) if model else None)
  avx512 = flags is not None and 'avx512f' in flags.group(1).split()
  assert recorded['signature'].startswith('avx512f ' if avx512 else 'no-avx512f ')
  assert recorded['signature'].endswith(f' tensorflow-{tf.__version__}')


def test_the_test_report_header_names_the_cpu_without_loading_tensorflow(monkeypatch):
  from tests import conftest  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(cpu_info, 'cpuinfo', lambda: _AVX512)
  monkeypatch.setenv('TF_ENABLE_ONEDNN_OPTS', '0')
  monkeypatch.setenv('ONEDNN_MAX_CPU_ISA', 'AVX2')
  assert conftest.pytest_report_header(None) == (
      'CPU: Intel(R) Xeon(R) Processor (cpu family 6, model 207, avx512f); '
      'TF_ENABLE_ONEDNN_OPTS 0; oneDNN ISA limit ONEDNN_MAX_CPU_ISA=AVX2')
  monkeypatch.setattr(cpu_info, 'cpuinfo', lambda: _AVX2)
  monkeypatch.delenv('TF_ENABLE_ONEDNN_OPTS')
  monkeypatch.delenv('ONEDNN_MAX_CPU_ISA')
  monkeypatch.delenv('DNNL_MAX_CPU_ISA', raising=False)
  assert conftest.pytest_report_header(None) == (
      'CPU: AMD EPYC 7B13 (cpu family 25, model 1, no avx512f); TF_ENABLE_ONEDNN_OPTS unset; '
      'oneDNN ISA limit none')
  # The suite's controller process builds the header: it must not pay for loading TensorFlow.
  loaded = subprocess.run(
      [sys.executable, '-c', 'import sys; from tests import conftest; '
       'conftest.pytest_report_header(None); print("tensorflow" in sys.modules)'],
      capture_output=True, text=True, cwd=str(conftest.REPO_ROOT), check=True)
  assert loaded.stdout.strip() == 'False', loaded.stderr
