"""Synthetic run directories, as bin/train leaves them, for sweep tests without training."""
import json
import os

from tf_ipmssl.sweep import plan as plan_lib


def write_run(root, cell, seed, test_error=None, finished=True, best=True, dataset=None,
              num_labeled='unbound', class_errors=None):
  """Writes <root>/<cell id>/seed_<seed>/{metrics,dataset}.json; returns the model dir.

  best=False writes a run without a validation split (no best-validation test error).
  num_labeled (an int or None) also writes the operative_config.gin line that binds it.
  class_errors ({class name: error}) writes per-class results at the reported step, with
  their mean as the balanced error.
  """
  model_dir = plan_lib.run_dir(root, cell, seed)
  os.makedirs(model_dir, exist_ok=True)
  metrics = {
      'finished': finished, 'step': 10, 'total_steps': 10,
      'final': {'step': 10, 'validation_error': None, 'test_error': test_error},
      'best': {'step': 10 if best else -1, 'validation_error': 1.0 if best else None,
               'test_error': test_error if best else None},
  }
  if best:
    metrics['final']['test_error'] = 99.0  # The best-validation number must win.
  if class_errors is not None:
    reported = metrics['best' if best else 'final']
    reported['test_class_errors'] = dict(class_errors)
    reported['test_balanced_error'] = sum(class_errors.values()) / len(class_errors)
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    json.dump(metrics, f)
  if num_labeled != 'unbound':
    with open(os.path.join(model_dir, 'operative_config.gin'), 'w') as f:
      f.write('# Parameters for build_ssl_data:\n'
              f"build_ssl_data.dataset = 'x'\nbuild_ssl_data.num_labeled = {num_labeled}\n"
              'build_ssl_data.split_seed = 0\n')
  with open(os.path.join(model_dir, 'dataset.json'), 'w') as f:
    json.dump({'name': dataset or cell.dataset, 'num_classes': 10}, f)
  return model_dir
