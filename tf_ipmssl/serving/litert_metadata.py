"""Reads the description a LiteRT export carries inside its flatbuffer (litert_export.py):
the JSON of its metadata file (metadata.py: class names, input size, resize rule, scores and
thresholds, ...) under the model's metadata entry METADATA_NAME, with the LiteRT package's
own schema (ai_edge_litert.schema_py_generated) and flatbuffers: no TensorFlow.
"""
import json
from typing import Optional

METADATA_NAME = 'tf_ipmssl_classifier'


def read(model_path) -> Optional[dict]:
  """The metadata inside the .tflite file at model_path; None where it holds none (an export
  written before the entry existed)."""
  from ai_edge_litert import schema_py_generated as schema  # pylint: disable=g-import-not-at-top
  with open(model_path, 'rb') as f:
    data = bytearray(f.read())
  model = schema.Model.GetRootAs(data, 0)
  for i in range(model.MetadataLength()):
    entry = model.Metadata(i)
    if (entry.Name() or b'').decode('utf-8') == METADATA_NAME:
      return json.loads(model.Buffers(entry.Buffer()).DataAsNumpy().tobytes().decode('utf-8'))
  return None
