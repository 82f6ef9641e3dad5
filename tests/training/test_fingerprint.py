"""The fingerprint of a fixed-seed 20-step quickstart run: a refactoring must keep it.

The run is gin/bases/fashion_mnist_ssl.gin (the K+1 Fisher(f) recipe) on real Fashion-MNIST with `train.steps = 20`,
`train.deterministic_ops = True` (one thread per op), no export, oneDNN off. Its
fingerprint is one SHA-256 over every variable of the final checkpoint (name, dtype,
shape, bytes) and the errors of metrics.json (best's as the checkpoint's float32, and
final). A change that alters what a run computes, even in the last bit, changes it. What
the run records beside its training (the labeled-set error, which reads the weights and
changes nothing; the confusion matrices; the latest evaluation kept in the checkpoint, whose
errors are metrics.json's) is left out, so that recording more keeps the fingerprints.

Float results differ between CPU types (AVX-512 and AVX2 kernels sum in another order) and
TensorFlow versions, so fingerprints.json keeps one per CPU signature; on a machine whose
signature has none the test is skipped. To record this machine's (on code known to be
right, e.g. before a refactoring):

  python tests/training/test_fingerprint.py --record
"""
import hashlib
import json
import os
import pathlib
import sys

import numpy as np
import pytest

if __name__ == '__main__':  # Run as a script: the repository root on sys.path.
  sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from tests.training import runs  # pylint: disable=g-import-not-at-top,wrong-import-position
from tf_ipmssl.run_dir import cpu_info  # pylint: disable=g-import-not-at-top,wrong-import-position

pytestmark = pytest.mark.numerics

FASHION_DIR = '/usr/share/datasets/fashion-mnist'
FINGERPRINTS = pathlib.Path(__file__).with_name('fingerprints.json')
# The study's K+1 Fisher(f) recipe (the quickstart until it took the entropy formulation).
QUICKSTART = str(runs.REPO_ROOT / 'gin' / 'bases' / 'fashion_mnist_ssl.gin')
BINDINGS = ['train.steps = 20', 'train.deterministic_ops = True',
            'train.export_classifier = False']
STEPS = 20
# Recorded beside the training, not part of what it computes (see the module doc).
OBSERVED_VARIABLES = ('best/labeled_error/', 'best/test_confusion/',
                      'best/validation_confusion/', 'final/')
FINGERPRINTED_ERRORS = ('step', 'validation_error', 'test_error')


def fingerprint(model_dir):
  """SHA-256 of the final checkpoint's variables and metrics.json's errors."""
  digest = hashlib.sha256()
  values = runs.checkpoint_values(os.path.join(model_dir, 'checkpoints', f'ckpt-{STEPS}'))
  for name in sorted(values):
    if name.startswith(OBSERVED_VARIABLES):
      continue
    value = values[name]
    digest.update(f'{name} {value.dtype} {value.shape}\n'.encode())
    digest.update(value.tobytes() if hasattr(value, 'tobytes') else repr(value).encode())
  with open(os.path.join(model_dir, 'metrics.json')) as f:
    metrics = json.load(f)
  errors = {which: {k: metrics[which][k] for k in FINGERPRINTED_ERRORS}
            for which in ('best', 'final')}
  # best's errors as the checkpoint keeps them, in float32 (metrics.json gives the rate of
  # each count exactly; it gave this float32 when the fingerprints were recorded).
  errors['best'] = {k: v if k == 'step' or v is None else float(np.float32(v))
                    for k, v in errors['best'].items()}
  digest.update(json.dumps(errors, sort_keys=True).encode())
  return digest.hexdigest()


def run_quickstart(model_dir):
  """Runs the 20-step quickstart in a subprocess; returns its fingerprint."""
  env = runs.environment()
  env.update({'TF_ENABLE_ONEDNN_OPTS': '0', 'TF_NUM_INTRAOP_THREADS': '1',
              'TF_NUM_INTEROP_THREADS': '1'})
  import subprocess  # pylint: disable=g-import-not-at-top
  result = subprocess.run(runs.train_command(model_dir, BINDINGS, gin_files=(QUICKSTART,)),
                          capture_output=True, text=True, timeout=1800, env=env,
                          cwd=str(runs.REPO_ROOT))
  assert result.returncode == 0, result.stderr[-3000:]
  return fingerprint(model_dir)


def signature():
  """This CPU's signature for the fingerprint: without a oneDNN instruction-set limit
  (ONEDNN_MAX_CPU_ISA), which cannot act on the run: its oneDNN is off."""
  return cpu_info.signature(environ={})


def recorded():
  return json.loads(FINGERPRINTS.read_text()) if FINGERPRINTS.exists() else {}


@pytest.mark.skipif(not os.path.isfile(os.path.join(FASHION_DIR, 'train-images-idx3-ubyte.gz')),
                    reason="needs Debian's dataset-fashion-mnist (bin/setup installs it)")
def test_quickstart_fingerprint_unchanged(tmp_path):
  expected = recorded().get(signature())
  if expected is None:
    pytest.skip(f'no fingerprint recorded for this CPU signature ({signature()}) in '
                f'{FINGERPRINTS.name}; record one on known-good code with '
                '`python tests/training/test_fingerprint.py --record`')
  assert run_quickstart(str(tmp_path / 'quickstart')) == expected, (
      f'the 20-step quickstart no longer computes what it did ({signature()})')


def main(argv):
  """--record: runs the quickstart and stores its fingerprint under this CPU's signature."""
  import tempfile  # pylint: disable=g-import-not-at-top
  if argv[1:] != ['--record']:
    sys.exit(f'usage: {argv[0]} --record')
  with tempfile.TemporaryDirectory() as directory:
    value = run_quickstart(os.path.join(directory, 'quickstart'))
  fingerprints = recorded()
  fingerprints[signature()] = value
  FINGERPRINTS.write_text(json.dumps(fingerprints, indent=2, sort_keys=True) + '\n')
  print(f'{signature()}: {value} -> {FINGERPRINTS}')


if __name__ == '__main__':
  main(sys.argv)
