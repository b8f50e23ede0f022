#!/usr/bin/env bash
# Rebuilds datasets/cpu-v1 from every committed CPU tuning database: the collection runs
# (experiments/cpu-dataset.yaml, under datasets/cpu-v1/db) and the cpu-suite runs
# (experiments/cpu-suite.yaml, under experiments/results/cpu-suite/db).
#   bash experiments/build_cpu_dataset.sh
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
while IFS= read -r dir; do args+=(--db "$dir"); done < <(
    find datasets/cpu-v1/db experiments/results/cpu-suite/db -name database_tuning_record.json -size +0 \
        -printf '%h\n' | sort)
costlab dataset build "${args[@]}" --out datasets/cpu-v1
