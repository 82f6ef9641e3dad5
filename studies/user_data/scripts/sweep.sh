#!/usr/bin/env bash
# The runs of studies/user_data/README.md: its 7 cells on the label splits 30-37 (56 runs),
# split by split, two at a time, every run trained by one commit (a git worktree). Each
# finished run's record goes under RECORDS, in this checkout, as it finishes; recorded runs
# are never trained again, so rerunning this script on any machine continues the sweep.
#
#   studies/user_data/scripts/sweep.sh [--commit]
#
# --commit: also commit RECORDS every minute while the sweep runs (and at its end), so that
# a session that ends abruptly loses no finished run.
# Settings (environment): WORK (run directories and the worktree; default runs/user_data,
# ignored by git), RECORDS (default studies/user_data/records), WORKERS (default 2), PYTHON
# (default .venv/bin/python). The training commit is the page's and is not a setting.
set -u
cd "$(dirname "$0")/../../.."
TRAIN_COMMIT=c73633cffff0bd1cba4de6b51f603ebd00f0123c
WORK=$(realpath -m "${WORK:-runs/user_data}")
RECORDS=${RECORDS:-studies/user_data/records}
WORKERS=${WORKERS:-2}
PYTHON=${PYTHON:-.venv/bin/python}
source studies/sweep_common.sh
commit_flag studies/user_data/scripts/sweep.sh "$@"
SRC=$WORK/src
use_train_worktree "$SRC" "$TRAIN_COMMIT"
records_message() {
  echo "Records: user_data, $(find "$RECORDS" -name metrics.json 2>/dev/null | wc -l) of 56" \
       "run(s) recorded"
}
[ "$COMMIT" = 1 ] && keep_committing records_message "$RECORDS"
echo "user_data sweep: training with $TRAIN_COMMIT; records in $RECORDS" \
     "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs))"
"$PYTHON" studies/user_data/scripts/run_plan.py --train_checkout="$SRC" --work="$WORK" \
    --records="$RECORDS" --workers="$WORKERS"
status=$?
echo "user_data sweep ended $(date -u +%FT%TZ) (status $status)"
exit $status
