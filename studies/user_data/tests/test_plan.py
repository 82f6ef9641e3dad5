"""The study's plan as its page fixes it: the splits, cells, bindings and contrasts read from
the page equal the ones written out here by hand, the sweep trains exactly those, and the
page's statements about the data (the imbalanced counts, the labeled images shared by 0% and
100% foreign) hold on the real Fashion-MNIST files."""
import os
import subprocess
import sys

import numpy as np
import pytest

from studies.user_data import plan as plan_lib

K_PLUS_1, SUPERVISED = 'table1/cifar10_fisher_kplus1_entropy', 'appendix_c/cifar10_none_4k'
SIX = 'gin/presets/fashion_mnist_6_classes.gin'
SUP = 'gin/presets/cpu_fashion_mnist_100_supervised.gin'
REAL_FASHION_MNIST = '/usr/share/datasets/fashion-mnist'
SCRIPT = os.path.join(os.path.dirname(plan_lib.PAGE), 'scripts', 'run_plan.py')


@pytest.fixture(scope='module')
def plan():
  return plan_lib.read_plan()


def test_the_page_fixes_splits_30_to_37_and_seven_cells(plan):
  assert plan.seeds == tuple(range(30, 38))
  imbalance = ('build_ssl_data.imbalance_ratio = 10.0',)
  assert plan.cells == (
      plan_lib.CellRow('balanced', K_PLUS_1, (), ()),
      plan_lib.CellRow('balanced', SUPERVISED, (SUP,), ()),
      plan_lib.CellRow('imbalanced', K_PLUS_1, (), imbalance),
      plan_lib.CellRow('imbalanced', SUPERVISED, (SUP,), imbalance),
      plan_lib.CellRow('six_known_0', K_PLUS_1, (SIX,), ('build_ssl_data.foreign_share = 0.0',)),
      plan_lib.CellRow('six_known_0', SUPERVISED, (SUP, SIX),
                       ('build_ssl_data.foreign_share = 0.0',)),
      plan_lib.CellRow('six_known_100', K_PLUS_1, (SIX,),
                       ('build_ssl_data.foreign_share = 1.0',)))
  assert len(plan_lib.runs(plan)) == 56


def test_each_question_is_the_contrast_the_page_states(plan):
  term = plan_lib.Term
  assert plan.questions == {
      'imbalance': (term('imbalanced', SUPERVISED, 'balanced test error', 1.0),
                    term('imbalanced', K_PLUS_1, 'balanced test error', -1.0)),
      'mismatch': (term('six_known_0', SUPERVISED, 'test error', 1.0),
                   term('six_known_100', K_PLUS_1, 'test error', -1.0)),
      'mismatch_cost': (term('six_known_100', K_PLUS_1, 'test error', 1.0),
                        term('six_known_0', K_PLUS_1, 'test error', -1.0)),
      'selection': (term('balanced', K_PLUS_1, "test error at the subset's step", 1.0),
                    term('balanced', K_PLUS_1, 'test error', -1.0)),
      'score_vs_chance': (term('six_known_0', K_PLUS_1, 'auroc critic', 1.0),
                          term(None, None, '0.5', -1.0)),
      'score_vs_softmax': (term('six_known_0', K_PLUS_1, 'auroc critic', 1.0),
                           term('six_known_0', SUPERVISED, 'auroc softmax', -1.0))}
  assert plan.questions['score_vs_chance'][1].constant == 0.5


def test_a_split_trains_each_part_with_its_files_and_bindings(plan):
  common = ['--gin_bindings=train.validation_subset_per_class = 10',
            '--gin_bindings=train.test_every_evaluation = True']
  preset = '--gin_file=gin/presets/cpu_fashion_mnist_100.gin'
  sup = f'--gin_file={SUP}'
  assert plan_lib.sweeps(plan, 33) == [
      ('balanced', [f'--cells={K_PLUS_1}', '--seeds=33,', preset, *common]),
      ('balanced', [f'--cells={SUPERVISED}', '--seeds=33,', preset, sup, *common]),
      ('imbalanced', [f'--cells={K_PLUS_1}', '--seeds=33,', preset, *common,
                      '--gin_bindings=build_ssl_data.imbalance_ratio = 10.0']),
      ('imbalanced', [f'--cells={SUPERVISED}', '--seeds=33,', preset, sup, *common,
                      '--gin_bindings=build_ssl_data.imbalance_ratio = 10.0']),
      ('six_known_0', [f'--cells={K_PLUS_1}', '--seeds=33,', preset, f'--gin_file={SIX}',
                       *common, '--gin_bindings=build_ssl_data.foreign_share = 0.0']),
      ('six_known_0', [f'--cells={SUPERVISED}', '--seeds=33,', preset, sup,
                       f'--gin_file={SIX}', *common,
                       '--gin_bindings=build_ssl_data.foreign_share = 0.0']),
      ('six_known_100', [f'--cells={K_PLUS_1}', '--seeds=33,', preset, f'--gin_file={SIX}',
                         *common, '--gin_bindings=build_ssl_data.foreign_share = 1.0'])]


def test_the_sweep_script_runs_the_plan_split_by_split(tmp_path):
  result = subprocess.run(
      [sys.executable, SCRIPT, '--dry_run', '--train_checkout=/src', f'--work={tmp_path}/w',
       f'--records={tmp_path}/r'], capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  lines = [line for line in result.stdout.splitlines() if line.startswith('bin/sweep ')]
  assert len(lines) == 8 * 7
  assert lines[0].startswith(f'bin/sweep --root={tmp_path}/w/balanced/0 '
                             f'--archive={tmp_path}/r/balanced --train_checkout=/src '
                             '--workers=1 --noplots')
  assert lines[1].startswith(f'bin/sweep --root={tmp_path}/w/balanced/1 '
                             f'--archive={tmp_path}/r/balanced')
  assert '--seeds=30,' in lines[0] and '--seeds=37,' in lines[-1]
  assert result.stdout.splitlines()[-1] == '0 of 56 runs recorded; 0 sweep(s) failed'


@pytest.mark.skipif(not os.path.isdir(REAL_FASHION_MNIST), reason='needs Debian\'s '
                    'dataset-fashion-mnist (bin/setup installs it)')
@pytest.mark.parametrize('seed', [30, 37])
def test_the_pages_statements_about_the_data_hold(seed):
  from tf_ipmssl.data import ssl_data  # pylint: disable=g-import-not-at-top
  base = dict(dataset='fashion_mnist', source='local', validation_size=5000, split_seed=seed)
  imbalanced = ssl_data.build_ssl_data(ssl_data.BuildSslData(
      **base, num_labeled=100, imbalance_ratio=10.0))
  counts = imbalanced.counts()
  assert counts['labeled'] == [25, 19, 15, 11, 9, 7, 5, 4, 3, 2]
  assert counts['test'] == [1000] * 10
  assert all(450 <= n <= 560 for n in counts['validation'])
  if seed == 30:
    assert counts['unlabeled'] == 21960
  six = dict(base, num_labeled=60, classes=(0, 1, 2, 3, 4, 5), unlabeled_size=20000)
  none, every = (ssl_data.build_ssl_data(ssl_data.BuildSslData(**six, foreign_share=share))
                 for share in (0.0, 1.0))
  for name in ('labeled_images', 'labeled_labels', 'validation_images', 'test_images',
               'foreign_test_images'):
    np.testing.assert_array_equal(getattr(none, name), getattr(every, name), err_msg=name)
  assert none.counts()['labeled'] == [10] * 6
  assert (none.counts()['foreign_unlabeled'], every.counts()['foreign_unlabeled']) == (0, 20000)
  assert len(none.foreign_test_images) == 4000 and len(none.test_labels) == 6000


def test_the_runs_train_from_one_commit_that_has_what_the_plan_reads():
  """sweep.sh's TRAIN_COMMIT is a full commit id, and (where this checkout's history holds
  it) that commit's trainer records every endpoint the page reads."""
  import re  # pylint: disable=g-import-not-at-top
  script = os.path.join(os.path.dirname(SCRIPT), 'sweep.sh')
  with open(script) as f:
    commit = re.search(r'^TRAIN_COMMIT=(\S+)$', f.read(), re.M).group(1)
  assert re.fullmatch(r'[0-9a-f]{40}', commit), commit
  root = os.path.dirname(os.path.dirname(os.path.dirname(plan_lib.PAGE)))
  found = subprocess.run(['git', '-C', root, 'cat-file', '-e', f'{commit}^{{commit}}'],
                         capture_output=True, check=False)
  if found.returncode:
    pytest.skip(f'{commit} is not in this clone\'s history')
  def show(path):
    return subprocess.run(['git', '-C', root, 'show', f'{commit}:{path}'], capture_output=True,
                          text=True, check=True).stdout
  assert 'validation_subset_per_class' in show('tf_ipmssl/training/run_config.py')
  assert 'test_every_evaluation' in show('tf_ipmssl/training/loop.py')
  assert 'foreign_test' in show('tf_ipmssl/training/trainer.py')
