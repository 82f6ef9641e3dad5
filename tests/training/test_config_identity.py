"""Which configuration changes a resume accepts (run.check_config): the new
configuration is compared with the run's run_config.json setting by setting."""
import gin
import pytest

from tf_ipmssl import configurables
from tf_ipmssl import errors
from tf_ipmssl.run_dir import run_files
from tf_ipmssl.training import run as run_lib

BASE = ["ssl.constraints = [@Fisher()]", 'train.steps = 10', 'train.eval_batch_size = 256',
        "build_ssl_data.data_dir = '/data/a'", 'ssl.lambda_ce = 1.5']


def _parse(bindings):
  gin.clear_config()
  gin.parse_config(bindings)


def _start(tmp_path):
  _parse(BASE)
  run_files.write_json(str(tmp_path), run_files.RUN_CONFIG_FILE,
                       configurables.run_config().to_json())


@pytest.mark.parametrize('change', ['train.eval_batch_size = 512',
                                    "build_ssl_data.data_dir = '/moved/a'",
                                    'train.steps = 20',
                                    "train.baseline = ('x.csv', 'cell')"])
def test_resume_accepts_changes_that_do_not_change_the_run(tmp_path, change):
  _start(tmp_path)
  _parse(BASE + [change])
  run_lib.check_config(str(tmp_path), configurables.run_config())


def test_resume_refuses_another_run_and_names_the_settings(tmp_path):
  _start(tmp_path)
  _parse(BASE + ['ssl.lambda_ce = 5.0', 'build_critic.width = 0.5', 'train.steps = 20',
                 'Fisher.penalty_weight = 1e-6'])
  with pytest.raises(errors.ConfigError) as raised:
    run_lib.check_config(str(tmp_path), configurables.run_config())
  message = str(raised.value)
  assert '\n' not in message
  # Every differing setting, with both values; the resumable one (steps) is not named.
  assert 'ssl.lambda_ce: run 1.5, now 5.0' in message
  assert 'build_critic.width: run 1.0, now 0.5' in message
  assert ("ssl.constraints: run [{'type': 'Fisher', 'name': 'fisher_f', 'component': 'f', "
          "'penalty_weight': 1e-07}], now [{'type': 'Fisher', 'name': 'fisher_f', "
          "'component': 'f', 'penalty_weight': 1e-06}]") in message
  assert 'train.steps' not in message
  gin.clear_config()


def test_resume_accepts_the_same_configuration_written_otherwise(tmp_path):
  """Settings, not gin lines, are compared: binding a default explicitly, or a constraint
  class the run does not use, is the same run."""
  _start(tmp_path)
  _parse(BASE + ['train.seed = 0', 'Sobolev.penalty_weight = 1.0'])
  run_lib.check_config(str(tmp_path), configurables.run_config())
  gin.clear_config()
