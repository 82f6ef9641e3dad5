"""What a run trains: the semi-supervised IPM GAN or the critic CNN alone (train.mode).

Two implementations of one small interface, so that the trainer, the loop and the tools ask
the algorithm instead of testing a mode string:

- `SemiSupervised` ('ssl', docs/algorithm.md#training-loop): n_c critic iterations on
  labeled, unlabeled and generated batches, then one generator iteration; an epoch is a pass
  over the unlabeled set.
- `Supervised` ('supervised', paper Appendix C): the critic's classifier with the labeled
  cross-entropy only; an epoch is a pass over the labeled set.
"""
import dataclasses

from tf_ipmssl import errors
from tf_ipmssl.objectives import constraint as constraint_lib


@dataclasses.dataclass(frozen=True)
class Algorithm:
  """The interface; `name` is train.mode's value."""
  name = 'algorithm'
  # Whether the run trains (and logs, samples, checkpoints the updates of) the generator.
  trains_generator = False

  def constraints(self, formulation, constraints) -> tuple:
    """The validated critic constraints the run uses."""
    raise NotImplementedError

  def epoch_size(self, data) -> int:
    """The examples one epoch passes over."""
    raise NotImplementedError

  def iterations_per_step(self, critic_iterations: int) -> int:
    """Critic updates per training step."""
    raise NotImplementedError

  def check_data(self, data) -> None:
    """A ConfigError when the data cannot train this algorithm."""
    del data

  def iteration(self, steps, data, stream):
    """A callable running one training iteration of `steps` (steps.TrainingSteps) on the
    batches of `data` (ssl_data.SSLData) that `stream(images, labels, seed_offset)` (a
    distributed iterator) yields."""
    raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class SemiSupervised(Algorithm):
  name = 'ssl'
  trains_generator = True

  def constraints(self, formulation, constraints):
    return constraint_lib.validate_constraints(formulation, constraints)

  def epoch_size(self, data):
    return len(data.unlabeled_images)

  def iterations_per_step(self, critic_iterations):
    return critic_iterations

  def check_data(self, data):
    if len(data.labeled_images) == 0:
      raise errors.ConfigError('SSL training needs labeled examples '
                               '(build_ssl_data.num_labeled)')

  def iteration(self, steps, data, stream):
    labeled = stream(data.labeled_images, data.labeled_labels, 0)
    unlabeled = stream(data.unlabeled_images, None, 1)
    return lambda: steps.ssl_iteration(labeled, unlabeled)


@dataclasses.dataclass(frozen=True)
class Supervised(Algorithm):
  name = 'supervised'

  def constraints(self, formulation, constraints):
    del formulation, constraints
    return ()

  def epoch_size(self, data):
    return len(data.labeled_images)

  def iterations_per_step(self, critic_iterations):
    del critic_iterations
    return 1

  def iteration(self, steps, data, stream):
    labeled = stream(data.labeled_images, data.labeled_labels, 0)
    return lambda: steps.supervised_iteration(labeled)


ALGORITHMS = {algorithm.name: algorithm for algorithm in (SemiSupervised(), Supervised())}


def get_algorithm(mode) -> Algorithm:
  """The algorithm of train.mode; a ConfigError for an unknown mode."""
  if mode not in ALGORITHMS:
    raise errors.ConfigError(f'train.mode = {mode!r} is not one of {list(ALGORITHMS)}')
  return ALGORITHMS[mode]
