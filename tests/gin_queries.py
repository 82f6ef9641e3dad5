"""What the gin configuration parsed in a test binds (tests read gin; the library does not)."""
import gin


def bound_value(name, default=None):
  """The value bound to gin parameter `name` ('configurable.parameter'), `default` if unbound."""
  try:
    return gin.query_parameter(name)
  except ValueError:
    return default
