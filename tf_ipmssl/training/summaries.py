"""Progress lines on stdout and TensorBoard summaries."""
import math
import os

import numpy as np
import tensorflow as tf


def format_duration(seconds):
  if not math.isfinite(seconds):
    return '?'
  seconds = int(seconds)
  hours, rest = divmod(seconds, 3600)
  minutes, secs = divmod(rest, 60)
  return f'{hours}h{minutes:02d}m{secs:02d}s' if hours else f'{minutes}m{secs:02d}s'


def progress_line(step, total_steps, epoch, images_per_second, eta_seconds, scalars,
                  validation_error=None):
  """One line: step, epoch, speed, ETA, then the logged scalars (CE, IPM, Ω's, λ's...)."""
  parts = [f'step {step}/{total_steps}', f'epoch {epoch:.2f}',
           f'{images_per_second:.1f} img/s', f'ETA {format_duration(eta_seconds)}']
  for name in sorted(scalars):
    parts.append(f'{name} {scalars[name]:.4g}')
  if validation_error is not None:
    parts.append(f'val_err {validation_error:.2f}%')
  return ' | '.join(parts)


def image_grid(images, columns=8):
  """Tiles [N, H, W, C] images in [-1, 1] into one [1, rows·H, columns·W, C] image in [0, 1]."""
  images = np.asarray(images, np.float32)
  n, h, w, c = images.shape
  rows = int(math.ceil(n / columns))
  grid = np.zeros([rows * h, columns * w, c], np.float32)
  for i in range(n):
    r, col = divmod(i, columns)
    grid[r * h:(r + 1) * h, col * w:(col + 1) * w] = images[i]
  return ((np.clip(grid, -1.0, 1.0) + 1.0) / 2.0)[None]


def write_scalars(writer, step, scalars):
  with writer.as_default(step=step):
    for name, value in scalars.items():
      tf.summary.scalar(name, value)
  writer.flush()


def read_scalars(directory):
  """{tag: [(step, value), ...]} (step order) from the TensorBoard event files in directory;
  a step written twice (a run resumed from a checkpoint) keeps its values in the order
  written, files in name (creation) order."""
  curves = {}
  if not tf.io.gfile.isdir(directory):
    return curves
  for name in sorted(tf.io.gfile.listdir(directory)):
    if 'tfevents' not in name:
      continue
    for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
      for value in event.summary.value:
        array = tf.make_ndarray(value.tensor)
        if array.ndim == 0:  # Scalars only (not the sample images).
          curves.setdefault(value.tag, []).append((int(event.step), float(array)))
  return {tag: sorted(points, key=lambda point: point[0]) for tag, points in curves.items()}
