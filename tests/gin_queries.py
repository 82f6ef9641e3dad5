"""What the gin configuration parsed in a test binds (tests read gin; the library does not)."""
import gin

# gin's ValueError for a name no configurable has, as opposed to one left unbound.
_UNKNOWN = ("doesn't have a parameter named", 'No configurable matching')


def bound_value(name, default=None):
  """The value bound to gin parameter `name` ('configurable.parameter'), `default` if unbound.

  Raises:
    ValueError: no configurable has that parameter (a misspelt or renamed name must not read
      as unbound).
  """
  try:
    return gin.query_parameter(name)
  except ValueError as e:
    if any(text in str(e) for text in _UNKNOWN):
      raise
    return default
