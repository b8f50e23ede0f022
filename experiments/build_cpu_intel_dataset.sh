#!/usr/bin/env bash
# Builds datasets/cpu-intel-v1 from the tuning databases measured on the 2-core Intel Xeon VM
# (LLVM rocketlake), each trial the fastest of 5 timings: the 36 runs of experiments/cpu-min5.yaml
# (tvm-xgb and the ordered related model) and the long reference runs of experiments/cpu-min5-reference.yaml.
#   bash experiments/build_cpu_intel_dataset.sh [OUT]      # OUT defaults to datasets/cpu-intel-v1
# Only those two models' sessions are read, so that later models added to cpu-min5.yaml (which
# pretrain on this dataset) are not folded back into it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-datasets/cpu-intel-v1}
args=()
while IFS= read -r dir; do args+=(--db "$dir"); done < <(
    find experiments/results/cpu-min5/db/*/tvm-xgb experiments/results/cpu-min5/db/*/lgbm-loto-related-ucb-ordered \
        experiments/results/cpu-min5-reference/db \
        -name database_tuning_record.json -size +0 -printf '%h\n' | sort)
costlab dataset build "${args[@]}" --out "$out"
