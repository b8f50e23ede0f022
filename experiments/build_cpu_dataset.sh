#!/usr/bin/env bash
# Builds a dataset from every committed CPU tuning database: the collection runs
# (experiments/cpu-dataset.yaml, under datasets/cpu-v1/db), the cpu-suite runs
# (experiments/cpu-suite.yaml) and its long reference runs (experiments/cpu-suite-reference.yaml).
#   bash experiments/build_cpu_dataset.sh [OUT]      # OUT defaults to datasets/cpu-v1
# The committed datasets/cpu-v1 was built when fewer suite runs existed (its README lists
# its sources); building it again now adds the later ones.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-datasets/cpu-v1}
args=()
while IFS= read -r dir; do args+=(--db "$dir"); done < <(
    find datasets/cpu-v1/db experiments/results/cpu-suite/db experiments/results/cpu-suite-reference/db \
        -name database_tuning_record.json -size +0 -printf '%h\n' | sort)
costlab dataset build "${args[@]}" --out "$out" --force  # replaces the dataset there; PROVENANCE.md stays
