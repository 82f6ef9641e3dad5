# What the sweep scripts share (sourced by studies/fashion_mnist_100/scripts/sweep_tables23.sh and
# studies/fashion_mnist_100/scripts/augmentation_effect.sh, from the checkout's root): the training code's worktree, and
# the committing of finished runs' records while a sweep runs.

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
# else the index holds), with the message MESSAGE_FUNCTION prints.
commit_records() {
  local message=$1 dirs=() d
  shift
  for d in "$@"; do
    [ -d "$d" ] && git add -- "$d" 2>/dev/null || continue
    # Only folders git knows: a pathspec naming nothing would refuse the whole commit.
    [ -n "$(git ls-files -- "$d" | head -1)" ] && dirs+=("$d")
  done
  [ "${#dirs[@]}" -gt 0 ] || return 0
  if ! git diff --cached --quiet -- "${dirs[@]}"; then
    git commit -q -m "$("$message")" -- "${dirs[@]}" || true
  fi
}

# keep_committing MESSAGE_FUNCTION DIR...: commit_records every minute in the background,
# and once more when the script exits, however it exits.
keep_committing() {
  COMMIT_ARGS=("$@")
  ( while sleep 60; do commit_records "${COMMIT_ARGS[@]}"; done ) &
  COMMITTER=$!
  trap 'kill $COMMITTER 2>/dev/null; commit_records "${COMMIT_ARGS[@]}"' EXIT
}
