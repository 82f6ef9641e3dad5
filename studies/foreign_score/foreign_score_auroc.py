"""How well each "none of these classes" score (tf_ipmssl/serving/foreign_score.py) tells
foreign images from the known classes' test images: AUROC and the share rejected at the
export's threshold, for trained runs (docs/foreign_score.md).

  .venv/bin/python studies/foreign_score/foreign_score_auroc.py --json_out=auroc.json \
      "K+1 f+^H, 50% foreign unlabeled=runs/kplus1_50" "supervised=runs/supervised" ...

Each NAME=MODEL_DIR is a finished run trained on a subset of its dataset's classes
(build_ssl_data.classes). Its best checkpoint's critic scores, exactly as its export computes
them (score_graph.score_images), every test image of its classes (the known images) and five
kinds of foreign image:

  other classes  the test images of the dataset's other classes (SSLData.foreign_test_images)
  inverted       the known test images, 255 - x
  rotated        the known test images turned a quarter (np.rot90)
  blocky         the known test images at a quarter of their size, enlarged again by repeating
                 each pixel (4x4 blocks)
  noise          uniform random uint8 images of the same shape (seed 0), as many
  photo crops    as many square crops of a photograph that matplotlib ships (its sample
                 grace_hopper.jpg, 512x600), each of a random side from 64 to 256 pixels at a
                 random place (seed 0), brought to the images' size and channels by
                 tf.image.resize (area) and the luminance of tf.image.rgb_to_grayscale; left
                 out where matplotlib is not installed (the `plots` extra)

For each score: the AUROC against the known images (foreign_score.auroc: ties count half), and
the share of the foreign images past the threshold that the export would state (fixed on the
run's validation images: score_graph.fit), beside the known test images' share (about 5% by
construction); and each score's AUROC averaged over the kinds, unweighted. Prints a markdown table per run; --json_out writes every number.
"""
import argparse
import json
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from tf_ipmssl import api  # pylint: disable=g-import-not-at-top
from tf_ipmssl.serving import foreign_score  # pylint: disable=g-import-not-at-top
from tf_ipmssl.serving import score_graph  # pylint: disable=g-import-not-at-top

KINDS = ('other classes', 'inverted', 'rotated', 'blocky', 'noise', 'photo crops')


def photo():
  """uint8 [H, W, 3] of matplotlib's sample photograph, or None without matplotlib."""
  try:
    from matplotlib import cbook  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with cbook.get_sample_data('grace_hopper.jpg') as f:
    return tf.io.decode_jpeg(f.read(), channels=3).numpy()


def photo_crops(picture, count, shape, seed=0):
  """uint8 [count, *shape]: square crops of `picture` (sides 64..256 at random places),
  resized (area) to shape's size and brought to its channels."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  height, width = picture.shape[:2]
  crops = []
  for _ in range(count):
    side = int(rng.integers(64, min(256, height, width) + 1))
    top, left = int(rng.integers(0, height - side + 1)), int(rng.integers(0, width - side + 1))
    crop = tf.image.resize(picture[top:top + side, left:left + side], shape[:2], 'area')
    if shape[-1] == 1:
      crop = tf.image.rgb_to_grayscale(crop)
    crops.append(np.clip(np.round(crop.numpy()), 0, 255).astype(np.uint8))
  return np.stack(crops)


def foreign_images(known, other_classes, seed=0, picture=None):
  """{kind: uint8 images} of KINDS, made from the known test images `known` (photo crops
  from `picture`, where given)."""
  height, width = known.shape[1:3]
  small = known[:, ::4, ::4]
  blocky = np.repeat(np.repeat(small, 4, axis=1), 4, axis=2)[:, :height, :width]
  rng = np.random.default_rng(seed)
  made = {'other classes': other_classes, 'inverted': 255 - known,
          'rotated': np.ascontiguousarray(np.rot90(known, axes=(1, 2))),
          'blocky': np.ascontiguousarray(blocky),
          'noise': rng.integers(0, 256, known.shape, dtype=np.uint8)}
  if picture is not None:
    made['photo crops'] = photo_crops(picture, len(known), known.shape[1:], seed)
  return made


def measure(model_dir):
  """{'scores': names, 'thresholds', 'known_rejected', 'kinds': {kind: {'auroc', 'rejected'}}}
  of the run's best checkpoint."""
  loaded = api.load(model_dir, 'best')
  data = loaded.data()
  if data.foreign_test_images is None:
    raise SystemExit(f'{model_dir} trained on all its classes (bind build_ssl_data.classes)')
  formulation = loaded.config.formulation
  fitted = score_graph.fit(loaded.critic, formulation, data)
  names = fitted['names']
  thresholds = np.array([fitted['thresholds'][n] for n in names])
  known = score_graph.score_images(loaded.critic, data.test_images, formulation)
  result = {'model_dir': model_dir, 'formulation': formulation, 'scores': names,
            'thresholds': fitted['thresholds'], 'fitted_on': fitted['fitted_on'],
            'known_images': len(known),
            'known_rejected': dict(zip(names, (known > thresholds).mean(axis=0).tolist())),
            'kinds': {}}
  made = foreign_images(data.test_images, data.foreign_test_images, picture=photo())
  for kind, images in made.items():
    scores = score_graph.score_images(loaded.critic, images, formulation)
    result['kinds'][kind] = {
        'images': len(scores),
        'auroc': {n: foreign_score.auroc(known[:, i], scores[:, i]) for i, n in enumerate(names)},
        'rejected': dict(zip(names, (scores > thresholds).mean(axis=0).tolist()))}
  return result


def mean_auroc(result, name):
  """The unweighted mean over the foreign kinds of score `name`'s AUROC."""
  return float(np.mean([k['auroc'][name] for k in result['kinds'].values()]))


def table(name, result):
  """Markdown lines: a row per kind, a column per score: AUROC (share rejected)."""
  names = foreign_score.NAMES
  lines = [f'**{name}** (`{result["model_dir"]}`)', '',
           '| foreign images | ' + ' | '.join(names) + ' |',
           '|---|' + '---:|' * len(names)]
  for kind, measured in result['kinds'].items():
    cells = [f'{measured["auroc"][n]:.3f} ({100 * measured["rejected"][n]:.0f}%)'
             if n in measured['auroc'] else '–' for n in names]
    lines.append(f'| {kind} | ' + ' | '.join(cells) + ' |')
  means = [f'{mean_auroc(result, n):.3f}' if n in result['known_rejected'] else '–'
           for n in names]
  lines.append('| mean AUROC of the kinds | ' + ' | '.join(means) + ' |')
  known = [f'{100 * result["known_rejected"][n]:.1f}%' if n in result['known_rejected']
           else '–' for n in names]
  lines.append('| known test images rejected | ' + ' | '.join(known) + ' |')
  return lines


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--json_out', help='write every number here (JSON)')
  parser.add_argument('runs', nargs='+', metavar='NAME=MODEL_DIR')
  args = parser.parse_args(argv)
  results = {}
  for item in args.runs:
    name, sep, model_dir = item.rpartition('=')
    if not sep or not name or not os.path.isdir(model_dir):
      raise SystemExit(f'expected NAME=MODEL_DIR of a run, not {item!r}')
    results[name] = measure(model_dir)
    print('\n'.join(table(name, results[name])) + '\n', flush=True)
  if args.json_out:
    with open(args.json_out, 'w') as f:
      json.dump(results, f, indent=1)


if __name__ == '__main__':
  main(sys.argv[1:])
