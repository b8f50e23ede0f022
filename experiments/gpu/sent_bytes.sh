#!/usr/bin/env bash
# Bytes of what the device tool sends from this checkout: tracked files and untracked files
# that git does not ignore (the carried paths come on top). Used by stage_wheels.sh and
# slim_tree.sh. One du over all names, so the total is one total.
set -euo pipefail
cd "$(dirname "$0")/../.."
(git ls-files -z; git ls-files -z --others --exclude-standard) | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1
