"""bin/export and tf_ipmssl.export refuse in one line, and change nothing, when a format's
extra is missing, the checkpoint does not exist, or an export directory of any chosen format
holds a user's file; an unknown format is refused before TensorFlow loads."""
import os

import pytest

from tests.reliability import checks
from tests.training import runs
from tf_ipmssl import errors
from tf_ipmssl.serving import formats


@pytest.fixture(scope='module')
def finished_run(tmp_path_factory):
  """A copy of the test run's tiny run without an export (runs.shared_run)."""
  return runs.copy_of_shared_run(tmp_path_factory, tmp_path_factory.mktemp('run') / 'model',
                                 **{'train.export_classifier': False})[1]


def _listing(directory):
  return sorted((os.path.relpath(os.path.join(root, n), directory),
                 os.stat(os.path.join(root, n)).st_mtime_ns)
                for root, _, names in os.walk(directory) for n in names)


def _export(*flags):
  return runs.run_program('export', *flags)


@pytest.mark.parametrize('fmt, extra, module', [
    ('onnx', 'onnx', 'onnxruntime'), ('onnx', 'onnx', 'tf2onnx'),
    ('litert', 'litert', 'ai_edge_litert.interpreter'),
    ('litert_int8', 'litert', 'ai_edge_litert.interpreter')])
def test_a_missing_extra_is_named_before_anything_is_written(finished_run, tmp_path,
                                                             monkeypatch, fmt, extra, module):
  import tf_ipmssl  # pylint: disable=g-import-not-at-top
  real = formats._importable  # pylint: disable=protected-access
  monkeypatch.setattr(formats, '_importable', lambda name: name != module and real(name))
  before = _listing(finished_run)
  export_dir = tmp_path / 'export'
  with pytest.raises(errors.UserError) as raised:
    tf_ipmssl.export(finished_run, export_dir, formats=['saved_model', fmt])
  assert str(raised.value) == (
      f"the {fmt} format needs the '{extra}' extra ({module} not installed): "
      f"pip install -e '.[{extra}]' (or bin/setup)")
  assert not os.listdir(tmp_path) and _listing(finished_run) == before


def test_serving_needs_only_the_runtime(monkeypatch):
  """A runtime serves without its converter (which imports TensorFlow)."""
  monkeypatch.setattr(formats, '_importable', lambda name: name != 'tf2onnx')
  formats.check_available(['onnx'], serving=True)
  with pytest.raises(errors.UserError, match=r"'onnx' extra \(tf2onnx not installed\)"):
    formats.check_available(['onnx'])


def test_a_checkpoint_that_does_not_exist(tmp_path):
  missing = tmp_path / 'no_run'
  result = _export(f'--model_dir={missing}', '--format=saved_model,onnx')
  checks.assert_one_error_line(result, str(missing))
  assert not os.listdir(tmp_path)


def test_a_run_without_its_best_checkpoint(finished_run, tmp_path):
  """A copy of the run without best/: --checkpoint=best names what is missing."""
  import shutil  # pylint: disable=g-import-not-at-top
  model_dir = tmp_path / 'model'
  shutil.copytree(finished_run, model_dir)
  shutil.rmtree(model_dir / 'best')
  before = _listing(model_dir)
  result = _export(f'--model_dir={model_dir}', '--checkpoint=best', '--format=onnx,litert')
  checks.assert_one_error_line(result, 'best')
  assert _listing(model_dir) == before


def test_an_export_dir_holding_a_users_file(finished_run, tmp_path):
  """The ONNX directory beside the SavedModel's holds a user's file: nothing is written, not
  even the SavedModel that would come first."""
  onnx_dir = tmp_path / 'export_onnx'
  onnx_dir.mkdir()
  (onnx_dir / 'notes.txt').write_text('mine')
  before = _listing(tmp_path)
  result = _export(f'--model_dir={finished_run}', f'--export_dir={tmp_path / "export"}',
                   '--format=saved_model', '--format=onnx')
  checks.assert_one_error_line(result, f'refusing to replace {onnx_dir}',
                               'not a tf_ipmssl classifier export')
  assert _listing(tmp_path) == before


def test_an_unknown_format(finished_run):
  result = _export(f'--model_dir={finished_run}', '--format=onnx,tflite')
  checks.assert_one_error_line(
      result, "Unknown export format 'tflite'; formats: saved_model, onnx, litert, "
      'litert_int8.')


def test_an_earlier_onnx_export_is_replaced_and_a_users_file_kept(finished_run, tmp_path):
  """The ONNX directory follows the SavedModel's rules: an earlier export of it is replaced;
  with a user's file beside it, the export is refused and the file kept."""
  import tf_ipmssl  # pylint: disable=g-import-not-at-top
  base = tmp_path / 'export'
  first = tf_ipmssl.export(finished_run, base, checkpoint='latest', formats='onnx')
  assert first.directories == {'onnx': f'{base}_onnx'} and first.export_dir == f'{base}_onnx'
  assert sorted(os.listdir(first.export_dir)) == ['MODEL_CARD.md', 'model.onnx',
                                                  'tf_ipmssl_classifier.json']
  tf_ipmssl.export(finished_run, base, checkpoint='latest', formats='onnx')
  assert sorted(os.listdir(tmp_path)) == ['export_onnx']
  (tmp_path / 'export_onnx' / 'mine.txt').write_text('mine')
  before = _listing(tmp_path)
  with pytest.raises(errors.UserError, match='besides an earlier export it holds mine.txt'):
    tf_ipmssl.export(finished_run, base, checkpoint='latest', formats=['onnx'])
  assert _listing(tmp_path) == before
