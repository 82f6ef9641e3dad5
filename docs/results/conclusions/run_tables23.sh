#!/usr/bin/env bash
# Tables 2 and 3 in miniature (100 Fashion-MNIST labels, the CPU preset), seeds 0-2, and the
# supervised baseline on the same splits; from a worktree of one commit, resumable.
set -u
cd /work/sweeps/src
PY=/work/main/.venv/bin/python
ROOT=/work/sweeps/tables23/root
A=/work/sweeps/tables23/archive
P=gin/presets/cpu_fashion_mnist_100.gin
$PY bin/sweep --cells=appendix_c/cifar10_none_4k --seeds=0,1,2 --root=$ROOT --archive=$A \
    --gin_file=$P --gin_file=gin/presets/cpu_fashion_mnist_100_supervised.gin --workers=2
for s in 0 1 2; do
  $PY bin/sweep --table=table2 --dataset=cifar10 --seeds="$s," --root=$ROOT --archive=$A \
      --gin_file=$P --workers=2
done
for s in 0 1 2; do
  $PY bin/sweep --table=table3 --dataset=cifar10 --seeds="$s," --root=$ROOT --archive=$A \
      --gin_file=$P --workers=2
done
echo "tables23 sweep done $(date)"
