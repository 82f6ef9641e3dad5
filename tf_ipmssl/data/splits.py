"""Labeled / validation / unlabeled splits of a training set.

See docs/algorithm.md#data-and-model-selection.

- validation: `validation_size` examples drawn at random from train, held out of
  everything else (model selection, hyperparameters).
- unlabeled: train minus validation; the labeled examples are included, as in the paper.
- labeled: exactly num_labeled / K examples of each class, drawn from train minus
  validation; `num_labeled=None` labels every non-validation example (the supervised
  all-labels baseline of Appendix C). With `labeled_counts`, that many of each class
  instead (an imbalanced labeled set: `geometric_counts` makes a geometric profile), and
  with `unlabeled_profile` the unlabeled set is cut to the same profile (`profile_counts`).
- validation_per_class: exactly that many examples of each class as validation, in place
  of `validation_size` drawn at random (a validation split as small as the label set).
- With a `labeled_pool` (a predefined fold, STL-10's): the labels come from the pool only
  (num_labeled / K per class drawn from it, or all of it for None) and validation is drawn
  from the examples outside it, so that the fold stays whole.

The draws use `np.random.Generator(np.random.PCG64(seed))`, never global state, so a
label-split seed names the same split on every machine.
"""
import dataclasses
from typing import Optional, Sequence

import numpy as np

from tf_ipmssl import errors


@dataclasses.dataclass(frozen=True, eq=False)
class SplitIndices:
  """Sorted int64 indices into the training split."""
  labeled: np.ndarray
  validation: np.ndarray
  unlabeled: np.ndarray


def _check_count(name: str, value, minimum: int, fix: str = ''):
  """Raises SplitError unless `value` is an integer >= minimum."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise errors.SplitError(f'{name}={value!r} must be an integer{fix}.')
  if value < minimum:
    raise errors.SplitError(f'{name}={value} must be at least {minimum}{fix}.')


def geometric_counts(total: int, num_classes: int, ratio: float) -> list:
  """`total` examples over K classes on a geometric profile: class c's share is proportional to
  ratio^(−c/(K−1)), so the first class has `ratio` times the last one's (up to rounding);
  rounded by largest remainder, so that the counts sum to `total`. A SplitError where a class
  would get none."""
  weights = np.power(float(ratio), -np.arange(num_classes) / max(num_classes - 1, 1))
  exact = total * weights / weights.sum()
  counts = np.floor(exact).astype(np.int64)
  # The remaining examples go to the largest remainders (ties: the lower class).
  order = np.argsort(-(exact - counts), kind='stable')
  counts[order[:total - int(counts.sum())]] += 1
  if counts.min() < 1:
    raise errors.SplitError(
        f'an imbalance ratio of {ratio} over {num_classes} classes leaves class '
        f'{int(np.argmin(counts))} no label among num_labeled={total}; raise num_labeled or '
        'lower build_ssl_data.imbalance_ratio.')
  return [int(c) for c in counts]


def profile_counts(available, profile) -> list:
  """The most examples of each class that keep the proportions of `profile` (counts, e.g.
  the labeled set's) while no class is asked for more than it has (`available`): class c
  gets floor(M · profile[c] / max(profile)), M the largest scale every class allows, and at
  least profile[c]."""
  available = np.asarray(available, np.float64)
  shares = np.asarray(profile, np.float64) / max(profile)
  scale = np.min(available / shares)
  return [max(int(p), int(np.floor(scale * share + 1e-9))) for p, share in zip(profile, shares)]


def make_splits(labels, num_classes: int, num_labeled: Optional[int],
                validation_size: int, seed: int,
                labeled_pool: Optional[np.ndarray] = None, *,
                labeled_counts: Optional[Sequence[int]] = None,
                unlabeled_profile: bool = False,
                validation_per_class: Optional[int] = None) -> SplitIndices:
  """Draws the labeled, validation and unlabeled indices of a training set.

  Args:
    labels: int [N] class of each training example, in [0, num_classes).
    num_classes: K.
    num_labeled: total labeled examples, a multiple of K (N/K per class); None for all
      non-validation examples (with a labeled_pool: all of the pool).
    validation_size: examples held out for validation (may be 0); with a labeled_pool,
      drawn from the examples outside it.
    seed: the label-split seed.
    labeled_pool: None, or the indices the labels are drawn from (a predefined fold).
    labeled_counts: None (num_labeled / K per class), or the labeled examples of each class
      (they sum to num_labeled).
    unlabeled_profile: with labeled_counts, cut the unlabeled set (which keeps the labeled
      examples) to their profile (`profile_counts`), drawn after the labels.
    validation_per_class: None, or the validation examples of each class (validation_size
      must then be 0).

  Returns:
    SplitIndices, each sorted int64.

  Raises:
    SplitError: the request is impossible; the message names the fix.
  """
  labels = np.asarray(labels)
  if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
    raise errors.SplitError(
        f'labels must be a vector of integers, got shape {labels.shape} '
        f'and dtype {labels.dtype}.')
  num_examples = len(labels)
  _check_count('num_classes', num_classes, 1)
  _check_count('validation_size', validation_size, 0)
  _check_count('seed', seed, 0)
  if labeled_counts is not None:
    labeled_counts = [int(c) for c in labeled_counts]
    if len(labeled_counts) != num_classes or min(labeled_counts) < 1:
      raise errors.SplitError(
          f'labeled counts {labeled_counts} must give each of the {num_classes} classes at '
          f'least one label; list {num_classes} positive counts, in label order.')
    num_labeled = sum(labeled_counts)
  if validation_per_class is not None:
    _check_count('validation_per_class', validation_per_class, 1)
    if validation_size:
      raise errors.SplitError('validation_per_class draws the validation split; bind '
                              'validation_size = 0 beside it.')
  if num_labeled is not None and labeled_counts is None:
    _check_count('num_labeled', num_labeled, 1,
                 '; use num_labeled=None to label every non-validation example')
    if num_labeled % num_classes:
      lower = max(num_classes, num_labeled - num_labeled % num_classes)
      raise errors.SplitError(
          f'num_labeled={num_labeled} is not divisible by num_classes={num_classes}; '
          f'use a multiple of {num_classes} (e.g. {lower}) so that every class gets '
          'the same number of labels.')
  if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
    raise errors.SplitError(
        f'labels span [{labels.min()}, {labels.max()}], outside [0, {num_classes - 1}]; '
        'num_classes does not match the dataset.')
  if validation_size >= num_examples:
    raise errors.SplitError(
        f'validation_size={validation_size} must be smaller than the {num_examples} '
        'training examples; lower validation_size.')

  rng = np.random.Generator(np.random.PCG64(seed))
  if labeled_pool is None:
    order = rng.permutation(num_examples)
    if validation_per_class is not None:
      held = _first_of_each_class(order, labels, num_classes, validation_per_class)
      validation = np.sort(order[held])
      unlabeled = np.sort(order[~held])
    else:
      validation = np.sort(order[:validation_size])
      unlabeled = np.sort(order[validation_size:])
    pool, pool_words = unlabeled, f'left after holding out validation_size={validation_size}'
    lower = 'or lower validation_size'
  else:
    pool = np.unique(np.asarray(labeled_pool, np.int64))
    if not pool.size:
      raise errors.SplitError('the labeled fold holds no training example.')
    if pool[0] < 0 or pool[-1] >= num_examples:
      raise errors.SplitError(f'labeled_pool spans [{pool[0]}, {pool[-1]}], outside the '
                              f'{num_examples} training examples.')
    outside = np.setdiff1d(np.arange(num_examples), pool)
    if validation_size > len(outside):
      raise errors.SplitError(
          f'validation_size={validation_size} is more than the {len(outside)} training '
          f'examples outside the labeled fold ({len(pool)} examples), where validation is '
          f'drawn; lower validation_size to at most {len(outside)}.')
    if validation_per_class is not None:
      order = rng.permutation(outside)
      validation = np.sort(order[_first_of_each_class(order, labels, num_classes,
                                                      validation_per_class)])
    else:
      validation = np.sort(rng.permutation(outside)[:validation_size])
    unlabeled = np.setdiff1d(np.arange(num_examples), validation)
    pool_words, lower = 'in the labeled fold', 'or label the whole fold with num_labeled=None'

  if num_labeled is None:
    labeled = pool
  else:
    remaining = labels[pool]
    counts = np.bincount(remaining, minlength=num_classes)
    if labeled_counts is None:
      per_class = num_labeled // num_classes
      wanted = [per_class] * num_classes
      short = int(np.argmin(counts))
      if counts[short] < per_class:
        raise errors.SplitError(
            f'num_labeled={num_labeled} needs {per_class} labeled examples per class, but '
            f'class {short} has only {counts[short]} training examples {pool_words}; lower '
            f'num_labeled to at most {counts.min() * num_classes} {lower}.')
    else:
      wanted = labeled_counts
      short = [c for c in range(num_classes) if counts[c] < wanted[c]]
      if short:
        c = short[0]
        raise errors.SplitError(
            f'the labeled counts ask for {wanted[c]} examples of class {c}, which has only '
            f'{counts[c]} training examples {pool_words}; lower its count to at most '
            f'{counts[c]} (or num_labeled, or the imbalance ratio) {lower}.')
    chosen = []
    for c in range(num_classes):
      candidates = pool[remaining == c]
      chosen.append(candidates[rng.permutation(len(candidates))[:wanted[c]]])
    labeled = np.sort(np.concatenate(chosen))
    if labeled_counts is not None and unlabeled_profile:
      unlabeled = _cut_to_profile(unlabeled, labeled, labels, num_classes, labeled_counts, rng)

  return SplitIndices(
      labeled=labeled.astype(np.int64),
      validation=validation.astype(np.int64),
      unlabeled=unlabeled.astype(np.int64))


def _first_of_each_class(order, labels, num_classes, per_class):
  """A mask over `order` (indices into labels): the first `per_class` examples of each class
  in that order; a SplitError where a class has fewer."""
  ordered = labels[order]
  counts = np.bincount(ordered, minlength=num_classes)
  if counts.min() < per_class:
    c = int(np.argmin(counts))
    raise errors.SplitError(
        f'validation_per_class={per_class} asks for {per_class} validation examples of each '
        f'class, but class {c} has only {counts[c]} training examples; lower '
        f'validation_per_class to at most {counts[c]}.')
  rank = np.zeros(len(order), np.int64)
  for c in range(num_classes):
    members = ordered == c
    rank[members] = np.arange(members.sum())
  return rank < per_class


def _cut_to_profile(unlabeled, labeled, labels, num_classes, profile, rng):
  """`unlabeled` cut to the proportions of `profile` (profile_counts of what each class has
  there): each class keeps its labeled examples and a random draw of its others."""
  available = np.bincount(labels[unlabeled], minlength=num_classes)
  kept = []
  for c, count in enumerate(profile_counts(available, profile)):
    members = unlabeled[labels[unlabeled] == c]
    own = np.isin(members, labeled)
    others = members[~own]
    kept.append(members[own])
    kept.append(others[rng.permutation(len(others))[:count - int(own.sum())]])
  return np.sort(np.concatenate(kept))


def subset_indices(labels, max_examples: Optional[int], seed: int = 0) -> np.ndarray:
  """A seeded, class-balanced subset of at most `max_examples` examples, sorted.

  For quick CPU smoke runs on a fraction of a dataset. Examples are ordered by a seeded
  permutation, then dealt round-robin over the classes, and the first `max_examples`
  kept: every class gets the same count (+-1) while it has examples, after which the
  remaining classes fill in (a plain random subset). A smaller subset is a prefix of a
  larger one with the same seed.

  Args:
    labels: int [N].
    max_examples: the size cap; None (or >= N) keeps everything.
    seed: seed of the permutation.

  Returns:
    Sorted int64 indices.
  """
  labels = np.asarray(labels)
  num_examples = len(labels)
  if max_examples is None or max_examples >= num_examples:
    return np.arange(num_examples, dtype=np.int64)
  order = np.random.Generator(np.random.PCG64(seed)).permutation(num_examples)
  ordered_labels = labels[order]
  # Rank of each example among the examples of its class, in permutation order.
  rank = np.empty(num_examples, np.int64)
  for c in np.unique(ordered_labels):
    members = ordered_labels == c
    rank[members] = np.arange(members.sum())
  dealt = order[np.lexsort((ordered_labels, rank))]
  return np.sort(dealt[:max_examples]).astype(np.int64)
