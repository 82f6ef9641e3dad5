"""The "none of these classes" statistics counted the slow way, as the tests' independent
answers to serving/foreign_score.py: the AUROC pair by pair, the threshold image by image."""
import numpy as np


def auroc_by_pairs(known, foreign):
  """The share of (known, foreign) pairs in which the foreign image scores higher, ties half."""
  return float(np.mean([(f > k) + 0.5 * (f == k) for k in known for f in foreign]))


def threshold_by_count(scores, share=0.95):
  """The smallest of `scores` that at least share·N of them are at or below, by counting."""
  for value in sorted(scores):
    if sum(s <= value for s in scores) >= share * len(scores) - 1e-9:
      return value
