"""Data layer: datasets, label splits and tf.data pipelines.

See docs/algorithm.md#data-and-model-selection.

The names below are imported on first use, so that importing `tf_ipmssl.data.dataset_specs`
(the registry of datasets, which `tf_ipmssl.cells` reads) does not import TensorFlow.
"""
import importlib

# Public name -> the module of this package that defines it.
_EXPORTS = {
    'DATASETS': 'datasets',
    'ImageDataset': 'datasets',
    'load_dataset': 'datasets',
    'DatasetSpec': 'dataset_specs',
    'CorruptDatasetFileError': 'local_files',
    'eval_batches': 'pipelines',
    'eval_stream': 'pipelines',
    'steps_per_epoch': 'pipelines',
    'to_model_input': 'pipelines',
    'training_stream': 'pipelines',
    'make_splits': 'splits',
    'SplitIndices': 'splits',
    'build_ssl_data': 'ssl_data',
    'SSLData': 'ssl_data',
}


def __getattr__(name):
  if name not in _EXPORTS:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  return getattr(importlib.import_module(f'{__name__}.{_EXPORTS[name]}'), name)


def __dir__():
  return sorted(list(globals()) + list(_EXPORTS))
