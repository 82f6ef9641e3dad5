"""Data layer: datasets, label splits and tf.data pipelines.

See docs/algorithm.md#data-and-model-selection.
"""
from tf_ipmssl.data.datasets import DATASETS
from tf_ipmssl.data.datasets import ImageDataset
from tf_ipmssl.data.datasets import load_dataset
from tf_ipmssl.data.local_files import CorruptDatasetFileError
from tf_ipmssl.data.pipelines import eval_stream
from tf_ipmssl.data.pipelines import steps_per_epoch
from tf_ipmssl.data.pipelines import to_model_input
from tf_ipmssl.data.pipelines import training_stream
from tf_ipmssl.data.splits import make_splits
from tf_ipmssl.data.splits import SplitIndices
from tf_ipmssl.data.ssl_data import build_ssl_data
from tf_ipmssl.data.ssl_data import SSLData
