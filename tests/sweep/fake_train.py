"""A stand-in for bin/train in runner tests: records its call, writes a finished run.

It writes its process id to MODEL_DIR/pid, appends its arguments to MODEL_DIR/calls.txt and
writes MODEL_DIR/process.json (start
and end times, TensorFlow thread variables). With FAKE_TRAIN_SECONDS set it takes that long.
If MODEL_DIR/fail exists, it prints an error and exits with status 3 instead of finishing;
if MODEL_DIR/kill exists, it kills itself with SIGKILL. With FAKE_TRAIN_EVENTS naming a
TensorBoard event file it writes the rest of a record as bin/train does: versions.json (its
command), dataset.json and that file as eval/events.out.tfevents.<n>.fake.v2 (n: this run's
count of calls). With FAKE_TRAIN_PER_SEED set, the record differs from seed to seed
(test error 12.5 + seed, dataset.json's split seed), so that a copy from the wrong run shows.
"""
import json
import os
import signal
import sys
import time


def main(argv):
  model_dir = [a for a in argv if a.startswith('--model_dir=')][0].split('=', 1)[1]
  os.makedirs(model_dir, exist_ok=True)
  with open(os.path.join(model_dir, 'pid'), 'w') as f:
    f.write(str(os.getpid()))
  with open(os.path.join(model_dir, 'calls.txt'), 'a') as f:
    f.write(json.dumps(argv) + '\n')
  started = time.time()
  time.sleep(float(os.environ.get('FAKE_TRAIN_SECONDS', '0')))
  with open(os.path.join(model_dir, 'process.json'), 'w') as f:
    json.dump({'start': started, 'end': time.time(),
               'intra': os.environ.get('TF_NUM_INTRAOP_THREADS'),
               'inter': os.environ.get('TF_NUM_INTEROP_THREADS')}, f)
  if os.path.exists(os.path.join(model_dir, 'kill')):
    print('the fake run kills itself', flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
  if os.path.exists(os.path.join(model_dir, 'fail')):
    print('error: the fake run failed on purpose', file=sys.stderr)
    return 3
  events = os.environ.get('FAKE_TRAIN_EVENTS')
  if events:
    _write_record(model_dir, argv, events)
  print('fake training done')
  shift = _seed(argv) if os.environ.get('FAKE_TRAIN_PER_SEED') else 0
  with open(os.path.join(model_dir, 'metrics.json'), 'w') as f:
    json.dump({'finished': True, 'best': {'test_error': 12.5 + shift},
               'final': {'test_error': 13.0 + shift}}, f)
  return 0


def _seed(argv):
  """The run's seed, from its binding of train.seed (bin/sweep's plan writes it)."""
  (binding,) = [a for a in argv if a.startswith('--gin_bindings=train.seed')]
  return int(binding.split('=')[-1])


def _write_record(model_dir, argv, events):
  with open(os.path.join(model_dir, 'versions.json'), 'w') as f:
    json.dump({'command': ['bin/train'] + list(argv), 'tensorflow': 'fake'}, f, indent=2)
  with open(os.path.join(model_dir, 'dataset.json'), 'w') as f:
    json.dump({'name': 'cifar10', 'num_classes': 10}
              | ({'split_seed': _seed(argv)} if os.environ.get('FAKE_TRAIN_PER_SEED') else {}),
              f, indent=2)
  with open(os.path.join(model_dir, 'calls.txt')) as f:
    calls = len(f.readlines())
  os.makedirs(os.path.join(model_dir, 'eval'), exist_ok=True)
  with open(events, 'rb') as source, open(
      os.path.join(model_dir, 'eval', f'events.out.tfevents.{calls}.fake.v2'), 'wb') as f:
    f.write(source.read())


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
