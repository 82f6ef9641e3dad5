"""The bin/ programs turn TensorFlow's oneDNN CPU kernels on unless the user chose, and only
before TensorFlow is imported."""
import os
import subprocess
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PRINT = ('import os; from tf_ipmssl import command_line; '
          'print(os.environ.get("TF_ENABLE_ONEDNN_OPTS"))')


@pytest.mark.parametrize('user_value, expected', [(None, '1'), ('0', '0'), ('1', '1')])
def test_command_line_sets_onednn_only_by_default(user_value, expected):
  env = {k: v for k, v in os.environ.items() if k != 'TF_ENABLE_ONEDNN_OPTS'}
  if user_value is not None:
    env['TF_ENABLE_ONEDNN_OPTS'] = user_value
  out = subprocess.run([sys.executable, '-c', _PRINT], cwd=_REPO, env=env, check=True,
                       capture_output=True, text=True).stdout
  assert out.strip() == expected


def test_command_line_sets_nothing_once_tensorflow_is_imported():
  """TensorFlow reads TF_ENABLE_ONEDNN_OPTS as it loads: set afterwards it would not change
  this process's kernels, yet a child process would inherit it and compute with others."""
  env = {k: v for k, v in os.environ.items() if k != 'TF_ENABLE_ONEDNN_OPTS'}
  out = subprocess.run([sys.executable, '-c', 'import tensorflow; ' + _PRINT], cwd=_REPO,
                       env=env, check=True, capture_output=True, text=True).stdout
  assert out.strip() == 'None'
