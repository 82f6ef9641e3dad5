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
