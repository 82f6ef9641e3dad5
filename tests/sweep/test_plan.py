"""Cells x seeds -> runs: model dirs, commands and seed bindings."""
import pytest

from tf_ipmssl import cells as cells_lib
from tf_ipmssl import errors
from tf_ipmssl.sweep import plan as plan_lib


@pytest.mark.parametrize('text, seeds', [
    ('3', (0, 1, 2)), ('0,1,4', (0, 1, 4)), ('7,', (7,)), ('2-4', (2, 3, 4)), ('1', (0,))])
def test_parse_seeds(text, seeds):
  assert plan_lib.parse_seeds(text) == seeds


@pytest.mark.parametrize('text', ['x', '0', '1,1', '-1,', '3-1'])
def test_bad_seeds(text):
  with pytest.raises(errors.ConfigError, match='seeds'):
    plan_lib.parse_seeds(text)


def test_zero_count_names_the_one_seed_form():
  with pytest.raises(errors.ConfigError, match=r"count of zero seeds.*--seeds='0,'"):
    plan_lib.parse_seeds('0')


def test_plan_is_cell_major_with_one_dir_per_run(tmp_path):
  cells = cells_lib.select_cells(['table2/cifar10_gp_f', 'table2/svhn_fisher_f'])
  runs = plan_lib.make_plan(cells, (0, 3), str(tmp_path))
  assert [(r.cell.id, r.seed) for r in runs] == [
      ('table2/cifar10_gp_f', 0), ('table2/cifar10_gp_f', 3),
      ('table2/svhn_fisher_f', 0), ('table2/svhn_fisher_f', 3)]
  assert runs[1].model_dir == str(tmp_path / 'table2' / 'cifar10_gp_f' / 'seed_3')
  assert len({r.model_dir for r in runs}) == 4


def test_command_appends_extra_files_then_bindings_then_seed(tmp_path):
  extra = tmp_path / 'extra.gin'
  extra.write_text('train.steps = 3\n')
  cell = cells_lib.get_cell('table1/svhn_fisher_kplus1')
  (run,) = plan_lib.make_plan([cell], (2,), str(tmp_path / 'root'),
                              ['gin/presets/cpu_quick.gin', str(extra)], ['train.log_every = 1'])
  assert run.command(('python', 'bin/train')) == [
      'python', 'bin/train', f'--model_dir={tmp_path}/root/table1/svhn_fisher_kplus1/seed_2',
      '--gin_file=gin/table1/svhn_fisher_kplus1.gin', '--gin_file=gin/presets/cpu_quick.gin',
      f'--gin_file={extra}', '--gin_bindings=train.log_every = 1',
      '--gin_bindings=train.seed = 2', '--gin_bindings=build_ssl_data.split_seed = 2']
  assert "'--gin_bindings=train.seed = 2'" in run.command_line()


def test_missing_extra_gin_file(tmp_path):
  with pytest.raises(errors.ConfigError, match='does not exist'):
    plan_lib.make_plan(cells_lib.select_cells(['table2/svhn_gp_f']), (0,), str(tmp_path),
                       ['gin/presets/nope.gin'])
