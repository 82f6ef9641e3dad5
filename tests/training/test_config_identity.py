"""Which configuration changes a resume accepts (run_record.check_config)."""
import gin
import pytest

from tf_ipmssl import configurables  # pylint: disable=unused-import
from tf_ipmssl import errors
from tf_ipmssl import run_files
from tf_ipmssl.training import run_config
from tf_ipmssl.training import run_record

BASE = ["train.constraints = [@Fisher()]", 'train.steps = 10', 'train.eval_batch_size = 256',
        "build_ssl_data.data_dir = '/data/a'", 'train.lambda_ce = 1.5']


def _parse(bindings):
  gin.clear_config()
  gin.parse_config(bindings)


def _start(tmp_path):
  _parse(BASE)
  (tmp_path / run_files.CONFIG_FILE).write_text(gin.config_str())


@pytest.mark.parametrize('change', ['train.eval_batch_size = 512',
                                    "build_ssl_data.data_dir = '/moved/a'",
                                    'train.steps = 20',
                                    "train.baseline = ('x.csv', 'cell')"])
def test_resume_accepts_changes_that_do_not_change_the_run(tmp_path, change):
  _start(tmp_path)
  _parse(BASE + [change])
  run_record.check_config(str(tmp_path), run_config.RunConfig.from_gin())


def test_resume_refuses_another_run_and_names_the_line(tmp_path):
  _start(tmp_path)
  _parse(BASE + ['train.lambda_ce = 5.0'])
  with pytest.raises(errors.ConfigError) as raised:
    run_record.check_config(str(tmp_path), run_config.RunConfig.from_gin())
  message = str(raised.value)
  assert 'now: train.lambda_ce = 5.0' in message and 'run: train.lambda_ce = 1.5' in message
  gin.clear_config()
