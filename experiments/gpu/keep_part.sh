#!/usr/bin/env bash
# On the device machine: keep one carried part of the staged wheels (stage_wheels.sh) in
# the ignored folder .whlkeep/, which stays on the warm machine for the next call.
#   run(carry=[".whl/K"], command="bash experiments/gpu/keep_part.sh K")
set -euo pipefail
part=${1:?usage: keep_part.sh PART_NUMBER}
mkdir -p .whlkeep
cp ".whl/$part"/* .whlkeep/
echo "kept part $part; .whlkeep now holds $(ls .whlkeep | wc -l) files, $(du -sh .whlkeep | cut -f1)"
