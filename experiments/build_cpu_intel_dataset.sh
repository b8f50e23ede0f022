#!/usr/bin/env bash
# Builds datasets/cpu-intel-v1 from the tuning databases measured on the 2-core Intel Xeon VM
# (LLVM rocketlake), each trial the fastest of 5 timings: the 36 runs of experiments/cpu-min5.yaml
# (tvm-xgb and the ordered related model, seeds 0-2; the later confirmations' seeds 3-4 are left out, as when it was
# built) and the long reference runs of experiments/cpu-min5-reference.yaml.
#   bash experiments/build_cpu_intel_dataset.sh [OUT] [--with-shapes]   # OUT defaults to datasets/cpu-intel-v1
# --with-shapes also reads experiments/cpu-intel-shapes.yaml's runs (two more shapes of each of the six operator
# families, same VM type and timing): datasets/cpu-intel-v2 is built that way.
# Only those models' sessions are read, so that later models added to cpu-min5.yaml (which
# pretrain on this dataset) are not folded back into it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-datasets/cpu-intel-v1}
roots=(experiments/results/cpu-min5/db/*/tvm-xgb/seed[012] experiments/results/cpu-min5/db/*/lgbm-loto-related-ucb-ordered/seed[012]
       experiments/results/cpu-min5-reference/db)
if [[ "${2:-}" == "--with-shapes" ]]; then
    roots+=(experiments/results/cpu-intel-shapes/db)
elif [[ -n "${2:-}" ]]; then
    echo "error: unknown option ${2} (expected --with-shapes)" >&2
    exit 2
fi
args=()
while IFS= read -r dir; do args+=(--db "$dir"); done < <(
    find "${roots[@]}" -name database_tuning_record.json -size +0 -printf '%h\n' | sort)
costlab dataset build "${args[@]}" --out "$out" --force  # replaces the dataset there; PROVENANCE.md stays
