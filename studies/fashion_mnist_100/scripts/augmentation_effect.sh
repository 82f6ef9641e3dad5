#!/usr/bin/env bash
# The augmentation measurement (docs/results/augmentation.md): the quickstart
# (table1/cifar10_fisher_kplus1_entropy) and its supervised critic (appendix_c/cifar10_none_4k)
# at 100 Fashion-MNIST labels, seeds 0-2, without and with augmentation (presets/augment.gin,
# presets/augment_labeled.gin): 12 runs, one at a time by default, seed by seed and arm beside
# arm, so that a sweep that stops part way leaves matched pairs. Every run is trained by one
# commit of the training code (a git worktree of TRAIN_COMMIT); each finished run's record goes
# to RECORDS/<arm>, in this checkout, as it finishes; recorded runs are never trained again, so
# rerunning this script continues the measurement.
#
#   studies/fashion_mnist_100/scripts/augmentation_effect.sh [--commit]
#
# --commit: also commit RECORDS every minute while it runs (and at its end).
# Settings (environment): TRAIN_COMMIT (default below), WORK (run directories and the
# worktree; default runs/augmentation, ignored by git), RECORDS (default
# docs/results/augmentation_records), WORKERS (default 1), PYTHON (default .venv/bin/python).
# The runs train from the worktree; bin/sweep itself (planning, archiving) runs from this
# checkout: after a change that moves or renames its modules, stop and rerun this script.
set -u
cd "$(dirname "$0")/../../.."
TRAIN_COMMIT=${TRAIN_COMMIT:-84392d39747e45786210fe48a7ae02825632762a}
WORK=$(realpath -m "${WORK:-runs/augmentation}")
RECORDS=${RECORDS:-docs/results/augmentation_records}
WORKERS=${WORKERS:-1}
PYTHON=${PYTHON:-.venv/bin/python}
source studies/sweep_common.sh
commit_flag studies/fashion_mnist_100/scripts/augmentation_effect.sh "$@"
SRC=$WORK/src
use_train_worktree "$SRC" "$TRAIN_COMMIT"
records_message() {
  echo "Records: augmentation measurement, $(find "$RECORDS" -name metrics.json | wc -l) of 12" \
       "run(s) recorded"
}
[ "$COMMIT" = 1 ] && keep_committing records_message "$RECORDS"

sweep() {  # sweep ARM CELL SEED PRESET...
  local arm=$1 cell=$2 seed=$3; shift 3
  local files=()
  for f in "$@"; do files+=(--gin_file="$f"); done
  "$PYTHON" bin/sweep --root="$WORK/$arm" --archive="$RECORDS/$arm" --train_checkout="$SRC" \
      --cells="$cell" --seeds="$seed," "${files[@]}" --workers="$WORKERS" --noplots
}
echo "augmentation measurement: training with $TRAIN_COMMIT from $SRC; records in $RECORDS" \
     "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs))"
QUICKSTART=table1/cifar10_fisher_kplus1_entropy
SUPERVISED=appendix_c/cifar10_none_4k
for s in 0 1 2; do
  sweep plain "$QUICKSTART" "$s" gin/presets/cpu_fashion_mnist_100.gin
  sweep augmented "$QUICKSTART" "$s" gin/presets/cpu_fashion_mnist_100.gin gin/presets/augment.gin
  sweep plain "$SUPERVISED" "$s" gin/presets/cpu_fashion_mnist_100_supervised.gin
  sweep augmented "$SUPERVISED" "$s" gin/presets/cpu_fashion_mnist_100_supervised.gin \
      gin/presets/augment_labeled.gin
done
echo "augmentation measurement done $(date -u +%FT%TZ)"
