"""gin_queries.bound_value: a parsed binding's value, or the default when it is unbound."""
import gin
import pytest

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
    # A name that nothing has is an error, not "unbound".
    with pytest.raises(ValueError, match="doesn't have a parameter named 'no_such'"):
      gin_queries.bound_value('ssl.no_such', 1.5)
    with pytest.raises(ValueError, match="No configurable matching 'nosuch'"):
      gin_queries.bound_value('nosuch.steps')
  finally:
    gin.clear_config()
