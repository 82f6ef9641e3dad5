"""Every run_config.json committed in the repository (the records of docs/results and of the
studies' folders: real runs of every format so far) rebuilds the configuration it records:
RunConfig.from_json keeps every setting the record holds (an older format's record, upgraded
by config_formats, gets today's defaults for the settings it predates), and the rebuilt
configuration's own record rebuilds it again."""
import json
import pathlib

import pytest

from tf_ipmssl import library  # pylint: disable=unused-import
from tf_ipmssl.run_dir import config_formats
from tf_ipmssl.training import run_config

REPO = pathlib.Path(__file__).resolve().parents[2]
RECORDS = sorted(path for folder in ('docs', 'studies')
                 for path in (REPO / folder).rglob('run_config.json'))


def test_there_are_committed_records():
  assert len(RECORDS) > 100


@pytest.mark.parametrize('path', RECORDS, ids=lambda p: str(p.relative_to(REPO).parent))
def test_a_committed_record_rebuilds_its_configuration(path):
  record = config_formats.upgrade(json.loads(path.read_text()))
  config = run_config.RunConfig.from_json(json.loads(path.read_text()))
  rebuilt = config.to_json()
  for group, values in record.items():
    if isinstance(values, dict):
      assert {k: rebuilt[group][k] for k in values} == values, group
    else:
      assert rebuilt[group] == values, group
  assert run_config.RunConfig.from_json(rebuilt) == config
