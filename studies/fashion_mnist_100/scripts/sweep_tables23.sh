#!/usr/bin/env bash
# The miniature Tables 2 and 3 (100 Fashion-MNIST labels, the CPU preset unchanged): the
# supervised baseline, Table 2's 12 and Table 3's 11 CIFAR-10 cells on seeds 0-2, then
# seeds 3 and 4 of the cells that decide conclusions (2) and (3), then the 46 runs of
# docs/results/protocol.md (those with the released code's broadcast f recorded in
# BROADCAST_RECORDS). Two runs at a time, every run trained by one commit of the training
# code (a git worktree of TRAIN_COMMIT). Each
# finished run's record goes to RECORDS, in this checkout, as it finishes; runs recorded
# there (or standing as rows of its runs_without_record.csv) are never trained again, so
# rerunning this script on any machine continues the sweep.
#
#   studies/fashion_mnist_100/scripts/sweep_tables23.sh [--commit]
#
# --commit: also commit RECORDS every minute while the sweep runs (and at its end),
# so that a session that ends abruptly loses no finished run.
# Settings (environment): TRAIN_COMMIT (default below), WORK (run directories and the
# worktree; default runs/tables23, ignored by git), RECORDS (default
# docs/results/tables23_records), BROADCAST_RECORDS (default docs/results/broadcast_f_records),
# WORKERS (default 2), PYTHON (default .venv/bin/python).
# The runs train from the worktree; bin/sweep itself (planning, archiving) runs from this
# checkout: after a change that moves or renames its modules, stop and rerun this script.
set -u
cd "$(dirname "$0")/../../.."
TRAIN_COMMIT=${TRAIN_COMMIT:-bbbb1c3ef15cfb12f13aed6dbb763cae4c938e8e}
WORK=$(realpath -m "${WORK:-runs/tables23}")
RECORDS=${RECORDS:-docs/results/tables23_records}
BROADCAST_RECORDS=${BROADCAST_RECORDS:-docs/results/broadcast_f_records}
WORKERS=${WORKERS:-2}
PYTHON=${PYTHON:-.venv/bin/python}
source studies/sweep_common.sh
commit_flag studies/fashion_mnist_100/scripts/sweep_tables23.sh "$@"
SRC=$WORK/src
use_train_worktree "$SRC" "$TRAIN_COMMIT"
records_message() {
  echo "Records: Tables 2 and 3 in miniature, $(find "$RECORDS" -name metrics.json | wc -l)" \
       "run(s) recorded; broadcast f, $(find "$BROADCAST_RECORDS" -name metrics.json 2>/dev/null | wc -l)"
}
[ "$COMMIT" = 1 ] && keep_committing records_message "$RECORDS" "$BROADCAST_RECORDS"

sweep() {
  "$PYTHON" bin/sweep --root="$WORK/root" --archive="$RECORDS" --train_checkout="$SRC" \
      --gin_file=gin/presets/cpu_fashion_mnist_100.gin --workers="$WORKERS" --noplots "$@"
}
# The released code's broadcast f, bound in TRAIN_COMMIT's own name: runs of their own root
# and records folder, so that a cell id never names two computations.
broadcast_sweep() {
  "$PYTHON" bin/sweep --root="$WORK/broadcast_root" --archive="$BROADCAST_RECORDS" \
      --train_checkout="$SRC" --gin_file=gin/presets/cpu_fashion_mnist_100.gin \
      --gin_bindings='train.reference_pairwise_f = True' --workers="$WORKERS" --noplots "$@"
}
echo "tables23 sweep: training with $TRAIN_COMMIT from $SRC; records in $RECORDS" \
     "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs))"
sweep --cells=appendix_c/cifar10_none_4k --seeds=0,1,2 \
    --gin_file=gin/presets/cpu_fashion_mnist_100_supervised.gin
for s in 0 1 2; do
  sweep --table=table2 --dataset=cifar10 --seeds="$s,"
done
# Table 3's 33 runs in one call, cell by cell: a call per seed would end each of its three
# calls with its 11th run training alone while the other worker waits.
sweep --table=table3 --dataset=cifar10 --seeds=0,1,2
# Seeds 3 and 4 where the conclusions are decided. Table 3's no-normalization Fisher is
# table2/cifar10_fisher_f's configuration: its seeds 3 and 4 are that cell's runs.
sweep --cells=table2/cifar10_gp_f,table2/cifar10_fisher_f,table3/cifar10_batch_norm_fisher,table3/cifar10_layer_norm_singleton_per_channel_fisher \
    --seeds=3,4
# The protocol's runs (docs/results/protocol.md), 46: the supervised critic on seeds 3-7;
# the four matched cells of conclusion (3) with the per-example f on seeds 3-7 (3-4 first:
# they complete the broadcast family's per-example partner); the three of them whose
# constraint touches the full f under the broadcast f on seeds 0-4; Omega_GP(f) and
# Omega_S(f) under the broadcast f on seeds 0-2.
MATCHED=table2/cifar10_fisher_f_sobolev_f,table2/cifar10_fisher_f_sobolev_fneg,table2/cifar10_fisher_fpos_sobolev_f,table2/cifar10_fisher_fpos_sobolev_fneg
sweep --cells=appendix_c/cifar10_none_4k --seeds=3-7 \
    --gin_file=gin/presets/cpu_fashion_mnist_100_supervised.gin
sweep --cells="$MATCHED" --seeds=3,4
broadcast_sweep --cells="${MATCHED%,*}" --seeds=0-4
sweep --cells="$MATCHED" --seeds=5-7
broadcast_sweep --cells=table2/cifar10_gp_f,table2/cifar10_sobolev_f --seeds=0-2
echo "tables23 sweep done $(date -u +%FT%TZ)"
