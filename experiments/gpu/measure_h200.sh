#!/usr/bin/env bash
# One prepared script for a lent H200 machine: the device tool runs it in a copy of the
# working tree, and what it leaves in $OUT comes back (at most 8 files, 16 MiB each).
# The machine's Python 3.12 has torch, numpy, scipy, pandas and the like, but not TVM,
# MLflow, LightGBM or xgboost, and it cannot reach the network: stage those as wheels
# first (experiments/gpu/stage_wheels.sh here, then keep_part.sh for every part but the
# last), and run this with the last part carried:
#   run(carry=[".whl/N"], command="bash experiments/gpu/measure_h200.sh", timeout_s=540)
# It tunes the LLM suite with tvm-xgb and lgbm at 32 trials each (as many as fit in
# 7 minutes), times torch.matmul (cuBLAS) fp16 GEMMs for the ratio, and brings back the
# tuning databases and the MLflow store in runs.tar.gz.
set -euo pipefail
OUT=${OUT:-/tmp/costlab-out}
mkdir -p "$OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true

# Gather the staged wheels (kept parts and the carried last one), check them, rejoin the
# wheels that were cut into pieces, and install them beside the image's packages.
mkdir -p /tmp/wheels
cp .whlkeep/* /tmp/wheels/ 2>/dev/null || true
for d in .whl/*/; do cp "$d"* /tmp/wheels/; done
(cd /tmp/wheels && sha256sum --check --quiet SHA256SUMS.pieces) > "$OUT/install.log" 2>&1
(cd /tmp/wheels && for first in *.whl.piece-00; do
   [ -e "$first" ] || continue
   cat "${first%-00}"-?? > "${first%.piece-00}" && rm "${first%-00}"-??
 done)
python3 -m pip install --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    /tmp/wheels/*.whl >> "$OUT/install.log" 2>&1
export PYTHONPATH=/tmp/site:$PWD

export TVM_CUDA_COMPILE_MODE=nvcc
python3 experiments/gpu/bench_cublas.py --m 4096 --n 4096 --k 4096 > "$OUT/cublas.json"
python3 experiments/gpu/bench_cublas.py --m 1 --n 4096 --k 4096 >> "$OUT/cublas.json"
mkdir -p "$OUT/keep"
timeout 420 python3 -m costlab run experiments/llm-ops-cuda.yaml search.trials=32 search.trials_per_iter=32 \
    mlflow.tracking_uri=sqlite:///$OUT/keep/mlflow.db work_dir=$OUT/keep/runs > "$OUT/run.log" 2>&1 || true
python3 -m costlab compare llm-ops-cuda --tracking-uri sqlite:///$OUT/keep/mlflow.db --out "$OUT/keep/results" \
    > "$OUT/compare.txt" 2>&1 || true
tar czf "$OUT/runs.tar.gz" -C "$OUT/keep" . && rm -rf "$OUT/keep"
