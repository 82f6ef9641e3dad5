# What the studies' sweep scripts share (sourced from the checkout's root): the training
# code's worktree, and the committing of finished runs' records while a sweep runs.

# commit_flag SCRIPT [ARG]: COMMIT=1 for --commit, 0 for none; any other argument is a usage
# error naming SCRIPT (exit 2).
commit_flag() {
  local script=$1
  shift
  case "${1:-}" in
    --commit) COMMIT=1 ;;
    "") COMMIT=0 ;;
    *) echo "usage: $script [--commit]" >&2; exit 2 ;;
  esac
}

# use_train_worktree SRC COMMIT: SRC is a git worktree of COMMIT (made when missing); exits
# with an error naming the fix when SRC stands at another commit.
use_train_worktree() {
  local src=$1 commit=$2
  if [ ! -f "$src/bin/train" ]; then
    mkdir -p "$(dirname "$src")"
    git worktree prune
    git worktree add --detach "$src" "$commit" || exit 1
  fi
  if [ "$(git -C "$src" rev-parse HEAD)" != "$(git rev-parse "$commit^{commit}")" ]; then
    echo "error: $src is not at $commit: remove it (git worktree remove $src)" >&2
    exit 1
  fi
}

# commit_records MESSAGE_FUNCTION DIR...: commits what changed in those DIRs (and nothing
# else the index holds), with the message MESSAGE_FUNCTION prints. A failing `git add` or
# `git commit` (a stale .git/index.lock, a full disk) is an error with git's own message:
# it returns 1 and the records stay uncommitted, said, never in silence.
commit_records() {
  local message=$1 dirs=() d out
  shift
  for d in "$@"; do
    [ -d "$d" ] || continue
    if ! out=$(git add -- "$d" 2>&1); then
      echo "error: records not committed: git add $d failed: $out" >&2
      return 1
    fi
    # Only folders git knows: a pathspec naming nothing would refuse the whole commit.
    [ -n "$(git ls-files -- "$d" | head -1)" ] && dirs+=("$d")
  done
  [ "${#dirs[@]}" -gt 0 ] || return 0
  if ! git diff --cached --quiet -- "${dirs[@]}"; then
    if ! out=$(git commit -q -m "$("$message")" -- "${dirs[@]}" 2>&1); then
      echo "error: records not committed: git commit failed: $out" >&2
      return 1
    fi
  fi
}

# keep_committing MESSAGE_FUNCTION DIR...: commit_records every minute in the background,
# and once more when the script exits, however it exits. The minute loop stops at the first
# failing commit, saying so; the exit commit's failure makes the script's exit status 1.
keep_committing() {
  COMMIT_ARGS=("$@")
  ( while sleep 60; do
      commit_records "${COMMIT_ARGS[@]}" || {
        echo "error: the records committer stopped; commit them by hand once git works" >&2
        exit 1; }
    done ) &
  COMMITTER=$!
  trap 'status=$?; kill $COMMITTER 2>/dev/null; commit_records "${COMMIT_ARGS[@]}" || status=1; exit $status' EXIT
}
