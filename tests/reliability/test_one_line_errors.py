"""Every failure a user can cause ends in one `error:` line: wrongly typed gin values, a full
disk, a read-only model_dir; and the programs' --help."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import program_server
from tests.reliability import checks
from tests.training import runs


@pytest.mark.parametrize('binding,fragment', [
    ("train.steps = 'ten'", "train.steps must be an integer >= 1 or None, got 'ten'"),
    ('train.steps = 12.5', 'train.steps must be an integer >= 1 or None, got 12.5'),
    ("train.critic_learning_rate = 'fast'",
     "train.critic_learning_rate must be a number >= 0.0, got 'fast'"),
])
def test_wrongly_typed_gin_value(data_dir, tmp_path, binding, fragment):
  result = runs.run_train(str(tmp_path / 'm'), runs.tiny_bindings(data_dir) + [binding])
  checks.assert_one_error_line(result, fragment)
  assert not os.path.exists(tmp_path / 'm' / 'checkpoints')


_BFLOAT16_PROBE = """
import tensorflow as tf
images, kernel = tf.ones([1, 4, 4, 2], tf.bfloat16), tf.ones([3, 3, 2, 2], tf.bfloat16)
try:
  tf.nn.conv2d(images, kernel, 1, 'SAME').numpy()
  tf.nn.conv2d_transpose(images, kernel, [1, 8, 8, 2], 2, 'SAME').numpy()
except tf.errors.OpError:
  print('fails')
else:
  print('runs')
"""


@pytest.mark.integration  # A whole run and a probe process under the kernel limit.
def test_bfloat16_under_an_avx2_kernel_limit_trains_or_stops_in_one_line(data_dir, tmp_path):
  """oneDNN held to AVX2: where TensorFlow still sends bfloat16 convolutions to it (an
  AVX-512 CPU) the run stops before its first step with one line naming the limit; where it
  does not, the run trains."""
  model_dir = str(tmp_path / 'm')
  result = program_server.run(
      runs.train_command(model_dir, runs.tiny_bindings(data_dir) + [
          "train.mixed_precision = 'mixed_bfloat16'"]),
      capture_output=True, text=True, timeout=600, cwd=str(runs.REPO_ROOT),
      env={**runs.environment(), 'ONEDNN_MAX_CPU_ISA': 'AVX2'})
  # Which of the two this machine is, asked apart from the library: a bfloat16 convolution
  # and transposed convolution in a child process under bin/train's environment (oneDNN on
  # unless the user's environment says otherwise, command_line.TENSORFLOW_DEFAULTS).
  env = {'TF_ENABLE_ONEDNN_OPTS': '1', **runs.environment(), 'ONEDNN_MAX_CPU_ISA': 'AVX2'}
  probe = subprocess.run([sys.executable, '-c', _BFLOAT16_PROBE], capture_output=True,
                         text=True, timeout=300, cwd=str(runs.REPO_ROOT), env=env)
  answer = probe.stdout.strip().splitlines()[-1]
  assert answer in ('runs', 'fails'), probe.stderr[-2000:]
  if answer == 'runs':
    assert result.returncode == 0, result.stderr[-2000:]
    with open(os.path.join(model_dir, 'metrics.json')) as f:
      metrics = json.load(f)
    assert metrics['finished'] and metrics['step'] == 4, metrics
  else:
    checks.assert_one_error_line(result, 'ONEDNN_MAX_CPU_ISA=AVX2 holds oneDNN',
                                 'train.mixed_precision = None')
    assert not os.path.exists(os.path.join(model_dir, 'checkpoints'))


@pytest.mark.integration  # A whole run, then two runs in a read-only mount.
@checks.needs_mount
def test_read_only_model_dir(data_dir, tmp_path):
  model_dir = str(tmp_path / 'm')
  os.makedirs(model_dir)
  read_only = f"mount --bind '{model_dir}' '{model_dir}' && mount -o remount,bind,ro '{model_dir}'"
  result = checks.in_private_mount(read_only, model_dir, runs.tiny_bindings(data_dir))
  checks.assert_one_error_line(result, 'Read-only file system')
  # A finished run on a read-only file system reports its result.
  assert runs.run_train(model_dir, runs.tiny_bindings(data_dir)).returncode == 0
  result = checks.in_private_mount(read_only, model_dir, runs.tiny_bindings(data_dir))
  assert result.returncode == 0, result.stderr
  assert 'nothing to do' in result.stdout and 'Finished 4 steps' in result.stdout


def test_train_help_shows_gin_flags():
  result = subprocess.run([runs.sys.executable, runs.TRAIN, '--help'], capture_output=True,
                          text=True, env=runs.environment(), timeout=120)
  # absl's --help exits with status 1.
  for flag in ('--gin_file', '--gin_bindings', '--model_dir'):
    assert flag in result.stdout, result.stdout


def test_setup_help_only_prints_usage(tmp_path):
  # A copy of bin/setup in an empty tree: were it to run, it would create .venv there.
  (tmp_path / 'bin').mkdir()
  shutil.copy(runs.REPO_ROOT / 'bin' / 'setup', tmp_path / 'bin' / 'setup')
  result = subprocess.run(['bash', str(tmp_path / 'bin' / 'setup'), '--help'],
                          capture_output=True, text=True, timeout=60)
  assert result.returncode == 0 and result.stdout.startswith('usage: bin/setup')
  assert not (tmp_path / '.venv').exists() and 'setup:' not in result.stdout


def test_nan_before_first_checkpoint_says_so_and_is_recorded(data_dir, tmp_path):
  import json  # pylint: disable=g-import-not-at-top
  model_dir = tmp_path / 'm'
  # As tests/training/test_user_errors.py: step 1's update blows the weights up.
  result = runs.run_train(str(model_dir), runs.tiny_bindings(data_dir, **{
      'train.mode': "'supervised'", 'train.critic_learning_rate': 1e30, 'train.steps': 6,
      'train.log_every': 1, 'train.checkpoint_every': 100, 'train.eval_every': 100}))
  checks.assert_one_error_line(result, 'NaN or Inf', 'no checkpoint had been written yet')
  assert 'left intact' not in result.stderr
  metrics = json.load(open(model_dir / 'metrics.json'))
  assert metrics['diverged_before_step'] >= 1 and not metrics['finished']


def test_a_model_dir_that_is_a_file_is_one_line(data_dir, tmp_path):
  a_file = tmp_path / 'notes.txt'
  a_file.write_text('mine')
  result = runs.run_train(str(a_file), runs.tiny_bindings(data_dir))
  checks.assert_one_error_line(result, f'--model_dir {a_file} is a file, not a directory')
  under = a_file / 'run'
  result = runs.run_train(str(under), runs.tiny_bindings(data_dir))
  checks.assert_one_error_line(result, f'--model_dir {under} lies under {a_file}, which is a file')
  assert a_file.read_text() == 'mine'


@pytest.mark.parametrize('binding,fragment', [
    ("build_critic.width = 'wide'", "build_critic.width must be a number > 0.0, got 'wide'"),
    ('build_critic.dropout = 1.5', 'build_critic.dropout must be a number >= 0.0 and < 1.0'),
    ('build_generator.ngf = 2.5', 'build_generator.ngf must be an integer >= 1, got 2.5'),
    ("Fisher.penalty_weight = 'big'", "Fisher.penalty_weight must be a number >= 0.0, got 'big'"),
    ('build_ssl_data.validation_size = -5',
     'build_ssl_data.validation_size must be an integer >= 0, got -5'),
])
def test_network_values_are_checked_and_no_model_dir_is_left(data_dir, tmp_path, binding,
                                                            fragment):
  model_dir = tmp_path / 'new_run'
  result = runs.run_train(str(model_dir), runs.tiny_bindings(data_dir) + [binding])
  checks.assert_one_error_line(result, fragment)
  assert not model_dir.exists()
