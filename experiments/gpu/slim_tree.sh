#!/usr/bin/env bash
# Keep the measured data out of what the device tool sends, for the GPU calls only.
#
# The device tool sends the tracked and untracked-not-ignored files, 64 MiB a call with the
# carried wheels. The committed tuning databases and datasets (experiments/results/,
# datasets/) are most of the tree and the H200 script needs none of them, so
#   bash experiments/gpu/slim_tree.sh on     # before stage_wheels.sh and the device calls
#   bash experiments/gpu/slim_tree.sh off    # right after the last device call
# 'on' untracks those folders in the index (git rm --cached) and ignores them in
# .git/info/exclude; every file stays on disk and in HEAD. 'off' restores the index from
# HEAD and removes the ignore lines. Do not commit in between: that commit would delete
# the data from the repository ('on' refuses to start with staged changes, and 'off'
# says if the index still differs).
set -euo pipefail
cd "$(dirname "$0")/../.."
SLIM_PATHS=(experiments/results datasets)
EXCLUDE=.git/info/exclude
BEGIN='# costlab slim_tree: begin' END='# costlab slim_tree: end'

case "${1:-}" in
  on)
    if grep -qx "$BEGIN" "$EXCLUDE" 2>/dev/null; then echo "already slim (see $EXCLUDE)"; exit 0; fi
    if ! git diff --cached --quiet; then
      echo "staged changes: commit or unstage them first, so that 'off' restores exactly HEAD" >&2
      exit 1
    fi
    git rm -r -q --cached -- "${SLIM_PATHS[@]}"
    { echo "$BEGIN"; for p in "${SLIM_PATHS[@]}"; do echo "/$p/"; done; echo "$END"; } >> "$EXCLUDE"
    ;;
  off)
    if grep -qx "$BEGIN" "$EXCLUDE" 2>/dev/null; then
      sed -i "/^$BEGIN\$/,/^$END\$/d" "$EXCLUDE"
    fi
    git reset -q HEAD -- "${SLIM_PATHS[@]}"
    if ! git diff --cached --quiet -- "${SLIM_PATHS[@]}"; then
      echo "the index still differs from HEAD under ${SLIM_PATHS[*]}: check git status" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: slim_tree.sh on|off" >&2
    exit 2
    ;;
esac
sent=$(bash experiments/gpu/sent_bytes.sh)
echo "slim $1: the device tool would send $((sent / 2**20)) MiB of tracked and untracked files"
