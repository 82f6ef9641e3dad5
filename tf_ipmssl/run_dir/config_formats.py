"""run_config.json's formats: today's, and the readers that bring an older one to it.

A run writes its configuration as run_config.json (run_config.RunConfig.to_json); every
reader of the file (RunConfig.from_json, the HParams, the results pages) reads it through
`upgrade`, so that it knows one layout only. Values are JSON: tuples as lists, non-finite
floats as their repr ('inf', '-inf', 'nan'), a constraint as {'type': its class name,
'name', and its fields}.

Format 4 (FORMAT_VERSION), one object per gin name:

    {"format_version": 4,
     "train": {"seed": 0, "mode": "ssl", ...},          every train.* setting
     "ssl": {"lambda_ce": 1.0, "constraints": [...]},   the algorithm's, under train.mode
     "build_ssl_data": {...}, "build_critic": {...}, "build_generator": {...},
     "make_strategy": {...}, "augmentation": {...}}

each holding every setting of that name as the run used it (constraints as bound, before
ssl.constraint_penalty_scale). Nothing derived is stored: a reader derives it as RunConfig
does (the critic's learning rate is train.critic_learning_rate × train.learning_rate_scale).

Format history (`upgrade` reads each):

- 1 (no 'format_version'): the train settings in four groups ('objective', 'optimizers',
  'loop', 'numerics'), with what the run derived from them (objective.algorithm is
  train.mode, objective.constraints the constraints scaled, objective.bound_constraints as
  bound, optimizers.critic_rate and generator_rate); the builders' settings under
  'bindings', by gin name.
- 2: also 'train', every train binding as given.
- 3: the semi-supervised settings (`SSL_SETTINGS_IN_TRAIN`) left the train bindings for the
  algorithm's own, under 'bindings'[train.mode].
- 4: the groups and 'bindings' gave way to one object per gin name, and the derived values
  were dropped (each number is stored once).

Through format 3 a run_config.json may hold build_critic.image_size (always 32, the data's),
which is no setting since the image size became build_ssl_data.image_size: `upgrade` drops
it. One without build_ssl_data.image_size is at its dataset's own size, as before.

Older run directories hold less than today's besides their run_config.json, and every
reader takes them as they are (metrics.json's history: reporting.py; dataset.json's and
versions.json's: run_record.py):

- checkpoints without the labeled-set error at the best step (`best/labeled_error`: NaN,
  metrics.json's `best.labeled_error` null) or without the latest evaluation (`final/`:
  loop.Loop takes metrics.json's); run.Run.restore_to_train requires neither.

This module knows formats, not settings: it imports nothing of the package.
"""
import copy

# The format RunConfig.to_json writes.
FORMAT_VERSION = 4
# The train bindings of formats 1 and 2 that are the semi-supervised algorithm's settings
# (`ssl.<name>`) since format 3.
SSL_SETTINGS_IN_TRAIN = ('formulation', 'constraints', 'lambda_ce', 'reference_pairwise_f',
                         'critic_iterations', 'generator_loss', 'ipm_rampup_updates',
                         'constraint_penalty_scale')
# Format 1's groups, and what in them the run derived rather than bound.
_V1_GROUPS = ('objective', 'optimizers', 'loop', 'numerics')
_V1_DERIVED = ('algorithm', 'constraints', 'bound_constraints', 'critic_rate',
               'generator_rate')
# Builder settings an older run_config.json may hold that are settings no longer.
NO_LONGER_SETTINGS = {'build_critic': ('image_size',)}


class FormatError(ValueError):
  """A run_config.json this reader does not know (a newer format, or not a run
  configuration)."""


def version_of(content: dict) -> int:
  """The format version of `content` (1 where it names none)."""
  return content.get('format_version', 1)


def upgrade(content: dict) -> dict:
  """`content` (a run_config.json of format 1 to 4, as read) in format 4, a new dict.

  Raises FormatError for a format this reader does not know.
  """
  version = version_of(content)
  if version not in _UPGRADES and version != FORMAT_VERSION:
    raise FormatError(f'run_config.json of format version {version!r}: this tf_ipmssl reads '
                      f'versions 1 to {FORMAT_VERSION}; use the tf_ipmssl that wrote it')
  content = copy.deepcopy(content)
  while version != FORMAT_VERSION:
    content = _UPGRADES[version](content)
    version = version_of(content)
  return content


def _format_2(content):
  """Format 1 → 2: 'train' from the groups' bound settings (a format-1 file without
  bound_constraints, from before the penalty scale, holds its constraints as bound)."""
  objective = content['objective']
  train = {name: value for group in _V1_GROUPS for name, value in content.get(group, {}).items()
           if name not in _V1_DERIVED}
  train['mode'] = objective['algorithm']
  if 'bound_constraints' in objective or 'constraints' in objective:
    train['constraints'] = objective.get('bound_constraints', objective.get('constraints'))
  return {**content, 'format_version': 2, 'train': train}


def _format_3(content):
  """Format 2 → 3: the semi-supervised train bindings become ssl's settings (a run of
  another algorithm had them unused: they are dropped)."""
  train = dict(content['train'])
  moved = {name: train.pop(name) for name in SSL_SETTINGS_IN_TRAIN if name in train}
  bindings = dict(content.get('bindings', {}))
  if train['mode'] == 'ssl':
    bindings['ssl'] = moved
  return {**content, 'format_version': 3, 'train': train, 'bindings': bindings}


def _format_4(content):
  """Format 3 → 4: one object per gin name; the groups (derived values) dropped."""
  out = {'format_version': 4, 'train': content['train']}
  for name, settings in content.get('bindings', {}).items():
    dropped = NO_LONGER_SETTINGS.get(name, ())
    out[name] = {k: v for k, v in settings.items() if k not in dropped}
  return out


_UPGRADES = {1: _format_2, 2: _format_3, 3: _format_4}
