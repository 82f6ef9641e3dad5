"""The "none of these classes" scores an export computes beside each image's class, and the
threshold rule it states: what they are, which a critic has, and how a threshold is fixed.

Every score grows with the belief that an image is none of the classes (the critic's
components: objectives/formulations.py; s = S(Φ(x)), p = softmax(s)):

  softmax   1 − max_y p_y: the largest class probability, negated (Hendrycks & Gimpel, ICLR
            2017, the standard baseline). Every classifier has it.
  entropy   −Σ_y p_y log p_y, the class softmax's entropy. Every classifier has it.
  fake      f− = v·Φ(x), the K+1 critic's (K+1)-th logit: "generated, not data". K+1 only.
  critic    −f, the critic's disbelief that x is data: f = f+ − f− of the run's K+1
            formulation (its f+: Σ p s, or Σ p log p for f+^H), f = v·Φ(x) of the plain
            critic. Not for a supervised run, whose v was never trained.

The threshold rule (fixed on labeled images only, never on foreign ones): each score's
threshold is the smallest of its values on the known images (the run's validation split, or
its labeled images where it has none) that PASS_SHARE of them score at or below; an image
scoring above it is called none of the classes. With 95%, about 5% of images of the known
classes are rejected by construction. The export's metadata (metadata.py) carries the names,
the thresholds, the default score, the images they were fixed on and the rule, so that any
runtime applies it without this library. This module does not import TensorFlow.
"""
import math
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from tf_ipmssl import errors

SOFTMAX, ENTROPY, FAKE, CRITIC = 'softmax', 'entropy', 'fake', 'critic'
NAMES = (SOFTMAX, ENTROPY, FAKE, CRITIC)
PASS_SHARE = 0.95
METADATA_KEY = 'foreign_score'


def names_for(formulation: Optional[str]) -> Tuple[str, ...]:
  """The scores of a critic trained with `formulation` ('plain', 'kplus1',
  'kplus1_entropy'; None for a supervised run), in the order an export answers them."""
  if formulation is None:
    return (SOFTMAX, ENTROPY)
  if formulation == 'plain':
    return (SOFTMAX, ENTROPY, CRITIC)
  return NAMES


def default_for(formulation: Optional[str]) -> str:
  """The score an export of a `formulation` critic applies unless told another: the one
  that measured best for such critics (docs/foreign_score.md): `critic` where the run has it
  (K+1 and plain), else `entropy` (a supervised run)."""
  return CRITIC if CRITIC in names_for(formulation) else ENTROPY


def threshold(scores, pass_share: float = PASS_SHARE) -> float:
  """The smallest value v of `scores` (known images' scores, any order) with at least
  pass_share of them <= v."""
  scores = np.sort(np.asarray(scores, np.float64).ravel())
  if not len(scores):
    raise ValueError('a threshold needs the scores of at least one known image')
  if not 0.0 < pass_share <= 1.0:
    raise ValueError(f'pass_share must be in (0, 1], got {pass_share}')
  return float(scores[max(math.ceil(pass_share * len(scores) - 1e-9), 1) - 1])


def describe(formulation: Optional[str], scores: np.ndarray, fitted_on: str,
             pass_share: float = PASS_SHARE) -> dict:
  """The metadata entry (METADATA_KEY) of an export whose known images `fitted_on`
  ('validation' or 'labeled') scored `scores` [N, S] (the columns: names_for(formulation))."""
  names = names_for(formulation)
  scores = np.asarray(scores)
  if scores.ndim != 2 or scores.shape[1] != len(names):
    raise ValueError(f'scores of shape {scores.shape}; expected [N, {len(names)}]')
  return {
      'names': list(names), 'default': default_for(formulation), 'formulation': formulation,
      'thresholds': {name: threshold(scores[:, i], pass_share)
                     for i, name in enumerate(names)},
      'fitted_on': fitted_on, 'images': int(len(scores)), 'pass_share': pass_share,
      'rule': (f'an image is none of the classes when its score exceeds the threshold: the '
               f'smallest value that {pass_share:.0%} of the {len(scores):,} {fitted_on} '
               'images score at or below (higher scores: less like the classes)')}


class Rule:
  """An export's scores and threshold rule, read from its metadata (describe's entry)."""

  def __init__(self, entry: dict, name: Optional[str] = None):
    self.names = tuple(entry['names'])
    self.name = name or entry['default']
    if self.name not in self.names:
      raise errors.UserError(
          f'this export has no {self.name!r} score; it has {", ".join(self.names)}')
    self.index = self.names.index(self.name)
    self.thresholds: Dict[str, float] = dict(entry['thresholds'])
    self.threshold = float(self.thresholds[self.name])
    self.entry = entry

  def chosen(self, scores: np.ndarray) -> np.ndarray:
    """float32 [N]: the chosen score's column of an export's `scores` [N, S]."""
    return np.asarray(scores, np.float32).reshape(-1, len(self.names))[:, self.index]

  def rejects(self, score: np.ndarray) -> np.ndarray:
    """bool [N]: which of the chosen score's values are past the threshold."""
    return np.asarray(score) > self.threshold


def rule_of(metadata: Optional[dict], name: Optional[str] = None) -> Optional[Rule]:
  """The Rule of an export's metadata; None for an export written before the scores (then
  `name`, if given, is refused)."""
  entry = (metadata or {}).get(METADATA_KEY)
  if entry is None:
    if name:
      raise errors.UserError(
          'this export has no "none of these classes" score (it was written before exports '
          'had one); export the run again with bin/export')
    return None
  return Rule(entry, name)


def auroc(known: Sequence[float], foreign: Sequence[float]) -> float:
  """The probability that a random foreign image scores higher than a random known one, ties
  counting half (the Mann-Whitney U statistic over the pairs, from scipy's average ranks)."""
  from scipy import stats  # pylint: disable=g-import-not-at-top  (not in the serving install)
  known = np.asarray(known, np.float64).ravel()
  foreign = np.asarray(foreign, np.float64).ravel()
  if not len(known) or not len(foreign):
    raise ValueError('AUROC needs known and foreign scores')
  ranks = stats.rankdata(np.concatenate([known, foreign]))  # Ties get their average rank.
  u = ranks[len(known):].sum() - len(foreign) * (len(foreign) + 1) / 2.0
  return float(u / (len(known) * len(foreign)))


def test_results(entry: dict, known, foreign) -> dict:
  """{score name: {'auroc', 'threshold', 'rejected_known_pct', 'rejected_foreign_pct'}} of
  the scores [N, S] of known and of foreign test images, in the columns of `entry` (describe's,
  whose thresholds they are measured at): each score's AUROC of the foreign images against the
  known ones (`auroc`, a fraction), its threshold, and the shares of known and of foreign
  images past it (rejected), in percent (100 · count / images). metrics.json's
  `foreign_test.scores` (run_dir/reporting.py)."""
  known, foreign = np.asarray(known, np.float64), np.asarray(foreign, np.float64)
  results = {}
  for i, name in enumerate(entry['names']):
    cut = float(entry['thresholds'][name])
    results[name] = {
        'auroc': auroc(known[:, i], foreign[:, i]), 'threshold': cut,
        'rejected_known_pct': 100.0 * int(np.sum(known[:, i] > cut)) / len(known),
        'rejected_foreign_pct': 100.0 * int(np.sum(foreign[:, i] > cut)) / len(foreign)}
  return results
