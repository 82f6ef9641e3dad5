"""gin_queries.bound_value: a parsed binding's value, or the default when it is unbound."""
import gin

from tests import gin_queries
from tf_ipmssl import configurables  # pylint: disable=unused-import


def test_bound_value_reads_bindings_and_defaults():
  gin.clear_config()
  try:
    with gin.unlock_config():
      gin.parse_config(['train.steps = 7', "ssl.formulation = 'kplus1_entropy'"])
    assert gin_queries.bound_value('train.steps') == 7
    assert gin_queries.bound_value('ssl.formulation', 'kplus1') == 'kplus1_entropy'
    assert gin_queries.bound_value('ssl.lambda_ce') is None
    assert gin_queries.bound_value('ssl.lambda_ce', 1.5) == 1.5
  finally:
    gin.clear_config()
