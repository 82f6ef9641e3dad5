"""Errors that are the user's to fix.

Every command-line program catches `UserError`, prints its message (which names the fix)
and exits with status 1, without a traceback. Anything else is a bug and keeps its traceback.
"""


class UserError(Exception):
  """A mistake the user can fix: bad configuration, missing data, impossible request."""


class DatasetNotFoundError(UserError):
  """No source held the requested dataset; the message lists every place searched."""


class SplitError(UserError):
  """An impossible labeled/validation split was requested."""


class ConfigError(UserError):
  """A configuration (gin file, binding, flag) that cannot work."""


class TrainingDivergedError(UserError):
  """A loss became NaN or Inf; the last good checkpoint is left intact."""


class Interrupted(UserError):
  """The user stopped the run (Ctrl-C); rerunning the same command resumes it."""
  exit_code = 130


class Terminated(UserError):
  """SIGTERM (e.g. a cluster's preemption) stopped the run after a checkpoint at its current
  step; rerunning the same command resumes it."""
  exit_code = 143


def check_choice(value, choices, what, valid='valid'):
  """Raises ConfigError "Unknown <what> <value!r>; <valid>: a, b, c." unless value is one
  of `choices`."""
  if value not in choices:
    raise ConfigError(f'Unknown {what} {value!r}; {valid}: {", ".join(choices)}.')


def check_number(name, value, *, integer=False, low=None, high=None, low_inclusive=True,
                 optional=False):
  """Raises ConfigError "<name> must be a number (an integer) >= low ...[ or None], got
  <value!r>" unless value is a number (an integer; never a bool) within the bounds, or None
  where `optional`."""
  if value is None and optional:
    return
  kinds = (int,) if integer else (int, float)
  ok = isinstance(value, kinds) and not isinstance(value, bool)
  if ok and low is not None:
    ok = value >= low if low_inclusive else value > low
  if ok and high is not None:
    ok = value < high
  if not ok:
    bounds = []
    if low is not None:
      bounds.append(f'{">=" if low_inclusive else ">"} {low}')
    if high is not None:
      bounds.append(f'< {high}')
    raise ConfigError(f'{name} must be {"an integer" if integer else "a number"}'
                      + (f' {" and ".join(bounds)}' if bounds else '')
                      + (' or None' if optional else '') + f', got {value!r}')



def first_line(e: Exception) -> str:
  """The first line of str(e), stripped; '' for an error without a message (what one-line
  reports of a damaged file or a failed call show as its cause)."""
  return (str(e).strip().splitlines() or [''])[0]


def message_of(e: Exception) -> str:
  """str(e) without the "In call to configurable ..." lines gin appends to an error raised
  inside a configurable (context for bugs, noise in a user's message): what the programs
  print after `error: `."""
  return '\n'.join(line for line in str(e).splitlines()
                   if not line.strip().startswith('In call to configurable'))


def without_gin_context(e: UserError) -> UserError:
  """`e`, or where gin re-raised it from inside a configurable (as a proxy of e's class that
  forwards attributes to it) an error of e's own class with message_of(e): what the Python
  API (tf_ipmssl/api.py) raises."""
  cls = type(e)
  if '__getattr__' not in vars(cls):
    return e
  return cls.__mro__[1](message_of(e))
