#!/usr/bin/env bash
# On the device machine: keep one carried part of the staged wheels (stage_wheels.sh) in
# /tmp/whlkeep/, which stays on the warm machine for the next call. (Not in the working
# tree: each call replaces the tree there, and a folder of it that is not here, such as an
# ignored .whlkeep/, was gone at the next call on 2026-12-04; /tmp stayed.)
#   run(carry=[".whl/K"], command="bash experiments/gpu/keep_part.sh K")
set -euo pipefail
part=${1:?usage: keep_part.sh PART_NUMBER}
KEEP=/tmp/whlkeep
mkdir -p "$KEEP"
cp ".whl/$part"/* "$KEEP/"
echo "kept part $part; $KEEP now holds $(ls "$KEEP" | wc -l) files, $(du -sh "$KEEP" | cut -f1)"
