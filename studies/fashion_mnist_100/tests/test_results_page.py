"""The regenerated parts of a results page: markers spliced, items wrapped, wall times."""
import os

import pytest
import tensorflow as tf

from tests.sweep import fake_results
from tf_ipmssl import cells as cells_lib
from studies.fashion_mnist_100 import results_page
from tf_ipmssl.sweep import results as results_lib


def test_splice_replaces_between_the_markers_only():
  text = 'intro\n<!-- begin a -->\nold\nlines\n<!-- end a -->\noutro\n'
  assert results_page.splice(text, 'a', 'new\n') == (
      'intro\n<!-- begin a -->\nnew\n<!-- end a -->\noutro\n')
  with pytest.raises(SystemExit, match='one pair of markers <!-- begin b -->'):
    results_page.splice(text, 'b', 'x')


def test_wrapped_indents_continuation_lines():
  item = '- ' + ' '.join(['word'] * 30)
  lines = results_page.wrapped(item, width=40).split('\n')
  assert lines[0].startswith('- word') and all(l.startswith('  word') for l in lines[1:])
  assert max(len(l) for l in lines) <= 40 and ' '.join(lines).split() == item.split()


def _write_events(path, wall_times):
  """An events file (TFRecords of Event protos) with one scalar at each wall time."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with tf.io.TFRecordWriter(path) as writer:
    for step, wall in enumerate(wall_times):
      summary = tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag='x',
                                                                        simple_value=1.0)])
      writer.write(tf.compat.v1.Event(wall_time=wall, step=step,
                                      summary=summary).SerializeToString())


def test_wall_time_table_sums_each_sessions_span(tmp_path):
  root = str(tmp_path / 'sweep')
  cell = cells_lib.get_cell('table2/cifar10_fisher_f')
  model_dir = fake_results.write_run(root, cell, 0, 20.0)
  train_dir = os.path.join(model_dir, 'train')
  _write_events(os.path.join(train_dir, 'events.out.tfevents.1.a'), [1000.0, 1100.0, 1400.0])
  _write_events(os.path.join(train_dir, 'events.out.tfevents.2.b'), [5000.0, 5050.0])
  assert results_page.session_spans(model_dir) == [400.0, 50.0]
  lines = results_page.wall_time_table(results_lib.collect(root, [cell]))
  assert lines[2] == '| table2/cifar10_fisher_f | 0 | 2 | 400, 50 | 450 |'
