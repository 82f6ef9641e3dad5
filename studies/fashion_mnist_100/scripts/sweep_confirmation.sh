#!/usr/bin/env bash
# The confirmation of docs/results/confirmation.md: its 10 cells on the label splits 20-25
# (60 runs), split by split so that a split's runs train on one CPU where a session allows,
# and its readings: the step-900 runs of broadcast Omega_S(f) (3, trained by the commit that
# trained the originals; before splits 23-25) and, after the primary runs, the longer budget
# (6). Two runs at a time, every run of a part trained by one commit (a git worktree). Each
# finished run's record goes under RECORDS, in this checkout, as it finishes; recorded runs
# are never trained again, so rerunning this script on any machine continues the sweep.
#
#   studies/fashion_mnist_100/scripts/sweep_confirmation.sh [--commit]
#
# --commit: also commit RECORDS every minute while the sweep runs (and at its end),
# so that a session that ends abruptly loses no finished run.
# Settings (environment): WORK (run directories and the worktrees; default
# runs/confirmation, ignored by git), RECORDS (default docs/results/confirmation_records),
# WORKERS (default 2), PYTHON (default .venv/bin/python). The training commits are the
# page's and are not settings.
# The runs train from the worktrees; bin/sweep itself (planning, archiving) runs from this
# checkout: after a change that moves or renames its modules, stop and rerun this script.
set -u
cd "$(dirname "$0")/../../.."
TRAIN_COMMIT=c5b46ca2370d253ddf575ceb4b2d9c59e8ef39ea
STEP900_COMMIT=bbbb1c3ef15cfb12f13aed6dbb763cae4c938e8e
WORK=$(realpath -m "${WORK:-runs/confirmation}")
RECORDS=${RECORDS:-docs/results/confirmation_records}
WORKERS=${WORKERS:-2}
PYTHON=${PYTHON:-.venv/bin/python}
source studies/sweep_common.sh
commit_flag studies/fashion_mnist_100/scripts/sweep_confirmation.sh "$@"
SRC=$WORK/src
STEP900_SRC=$WORK/src_step900
use_train_worktree "$SRC" "$TRAIN_COMMIT"
use_train_worktree "$STEP900_SRC" "$STEP900_COMMIT"
records_message() {
  echo "Records: confirmation, $(find "$RECORDS/per_example" "$RECORDS/broadcast" \
       -name metrics.json 2>/dev/null | wc -l) of 60 primary run(s) recorded;" \
       "readings, $(find "$RECORDS"/step900 "$RECORDS"/longer_* -name metrics.json \
       2>/dev/null | wc -l) of 9"
}
[ "$COMMIT" = 1 ] && keep_committing records_message "$RECORDS"

PRESET=gin/presets/cpu_fashion_mnist_100.gin
sweep() {  # sweep PART SOURCE --cells=... --seeds=... [more bin/sweep flags]
  local part=$1 src=$2; shift 2
  "$PYTHON" bin/sweep --root="$WORK/$part" --archive="$RECORDS/$part" --train_checkout="$src" \
      --gin_file="$PRESET" --workers="$WORKERS" --noplots "$@"
}
echo "confirmation sweep: training with $TRAIN_COMMIT; records in $RECORDS" \
     "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs))"
PER_EXAMPLE=table2/cifar10_fisher_f_sobolev_f,table2/cifar10_fisher_f_sobolev_fneg,table3/cifar10_batch_norm_fisher,table3/cifar10_none_fisher,table1/cifar10_fisher_plain,table1/cifar10_fisher_kplus1,table1/cifar10_sobolev_plain,table1/cifar10_sobolev_kplus1
BROADCAST=table2/cifar10_fisher_f_sobolev_f,table2/cifar10_fisher_f_sobolev_fneg
# The step-900 reading first (it trained between splits 22 and 23): a defect at a run's end
# would move every run's late endpoint, family (2)'s primary one. It judges none of the tests;
# its runs train in the originals' commit and binding, split 0's two one after the other.
sweep step900/steps_900 "$STEP900_SRC" --cells=table2/cifar10_sobolev_f --seeds=0, \
    --gin_bindings='train.reference_pairwise_f = True'
sweep step900/steps_1800 "$STEP900_SRC" --cells=table2/cifar10_sobolev_f --seeds=0,1 \
    --gin_bindings='train.reference_pairwise_f = True' --gin_bindings='train.critic_updates = 3600'
for s in 20 21 22 23 24 25; do
  sweep per_example "$SRC" --cells="$PER_EXAMPLE" --seeds="$s,"
  sweep broadcast "$SRC" --cells="$BROADCAST" --seeds="$s," \
      --gin_bindings='ssl.reference_pairwise_f = True'
done
# The reading after the primary runs: the longer budget, 4x the critic updates, the ramp-up
# unchanged.
sweep longer_per_example "$SRC" --cells="$BROADCAST" --seeds=20,21 \
    --gin_bindings='train.critic_updates = 7200'
sweep longer_broadcast "$SRC" --cells=table2/cifar10_fisher_f_sobolev_f --seeds=20,21 \
    --gin_bindings='train.critic_updates = 7200' --gin_bindings='ssl.reference_pairwise_f = True'
echo "confirmation sweep done $(date -u +%FT%TZ)"
