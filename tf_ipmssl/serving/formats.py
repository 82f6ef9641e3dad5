"""The formats a classifier is exported in, where each goes, and the extra each needs.

One table, so that bin/export, tf_ipmssl.export, bin/predict and the benchmark agree on the
names, the directories and the packages. The SavedModel needs TensorFlow alone; ONNX needs
tf2onnx to convert and onnxruntime to serve (the `onnx` extra); LiteRT needs TensorFlow's
converter and ai-edge-litert's interpreter to serve (the `litert` extra). A format whose
packages are missing is refused in one line naming the extra, before anything is written.

Where each goes: the SavedModel in the export directory itself (MODEL_DIR/export, or
bin/export's MODEL_DIR/export_<checkpoint> or --export_dir), each other format in a sibling
directory named with its suffix (EXPORT_DIR_onnx, EXPORT_DIR_litert, EXPORT_DIR_litert_int8),
so that every export directory holds one model and its metadata, and is written and replaced
by the same crash-safe rules (export.py). This module does not import TensorFlow.
"""
import dataclasses
import importlib
import os
from typing import Sequence, Tuple

from tf_ipmssl import errors
from tf_ipmssl.serving import metadata


@dataclasses.dataclass(frozen=True)
class Format:
  """An export format.

  Attributes:
    name: the --format name.
    model_file: the file that holds the model in its directory (what marks an export of it).
    suffix: appended to the export directory's path ('' for the SavedModel's own).
    extra: the setup.py extra that installs its converter and runtime ('' for none).
    converters: the modules that write it (besides TensorFlow), imported to check.
    runtimes: the modules that serve it, imported to check (a runtime serves without the
      converters, which import TensorFlow).
    description: what it is, for --help and messages.
  """
  name: str
  model_file: str
  suffix: str
  extra: str
  converters: Tuple[str, ...]
  runtimes: Tuple[str, ...]
  description: str


SAVED_MODEL = 'saved_model'
ONNX = 'onnx'
LITERT = 'litert'
LITERT_INT8 = 'litert_int8'

FORMATS = {f.name: f for f in (
    Format(SAVED_MODEL, 'saved_model.pb', '', '', (), (), 'TensorFlow SavedModel'),
    Format(ONNX, 'model.onnx', '_onnx', 'onnx', ('tf2onnx', 'onnx'), ('onnxruntime',),
           'ONNX, served by onnxruntime'),
    Format(LITERT, 'model.tflite', '_litert', 'litert', (), ('ai_edge_litert.interpreter',),
           'LiteRT (TensorFlow Lite) flatbuffer, float32'),
    Format(LITERT_INT8, 'model.tflite', '_litert_int8', 'litert', (),
           ('ai_edge_litert.interpreter',),
           'LiteRT with dynamic-range quantization (int8 weights, float activations)'),
)}
DEFAULT_FORMATS = (SAVED_MODEL,)
MODEL_FILES = tuple(dict.fromkeys(f.model_file for f in FORMATS.values()))


def parse(formats) -> Tuple[str, ...]:
  """The format names of `formats` (a name, a comma list, or a sequence of either), each
  once, in the given order; a ConfigError for an unknown one or none at all."""
  if isinstance(formats, str):
    formats = [formats]
  names = [n.strip() for item in formats or () for n in str(item).split(',') if n.strip()]
  for name in names:
    errors.check_choice(name, tuple(FORMATS), 'export format', 'formats')
  if not names:
    raise errors.ConfigError(f'no export format given; formats: {", ".join(FORMATS)}.')
  return tuple(dict.fromkeys(names))


def directory(export_dir: str, name: str) -> str:
  """Where format `name` of the export at export_dir is written (the module doc)."""
  return export_dir.rstrip('/') + FORMATS[name].suffix


def _importable(module):
  """Whether `module` imports (the test of a missing extra replaces this)."""
  try:
    importlib.import_module(module)
  except ImportError:
    return False
  return True


def check_available(names: Sequence[str], serving=False):
  """A UserError naming the extra to install for the first format whose packages (with
  `serving`, its runtime's only) are missing; nothing else happens."""
  for name in names:
    spec = FORMATS[name]
    needed = spec.runtimes if serving else spec.converters + spec.runtimes
    missing = [m for m in needed if not _importable(m)]
    if missing:
      raise errors.UserError(
          f"the {name} format needs the '{spec.extra}' extra ({', '.join(missing)} not "
          f"installed): pip install -e '.[{spec.extra}]' (or bin/setup)")


def of_directory(export_dir: str) -> str:
  """The format of the export in export_dir, by its model file; '' when it holds none."""
  name = (metadata.read(export_dir) or {}).get('format')
  if name in FORMATS:
    return name
  for spec in FORMATS.values():
    if os.path.exists(os.path.join(export_dir, spec.model_file)):
      return spec.name
  return ''
