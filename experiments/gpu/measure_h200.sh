#!/usr/bin/env bash
# One prepared script for a lent H200 machine (the device tool runs it in a copy of
# the working tree; results go to $OUT). It needs costlab's Python dependencies for
# the machine's Python, which has no network: carry wheels in shared/wheels/ (apache-tvm
# 0.27.0.post1 and apache-tvm-ffi 0.1.14.post0 for its Python, mlflow, xgboost,
# lightgbm, pydantic, torch-geometric), or a prepared venv.
#   run: bash experiments/gpu/measure_h200.sh      (timeout_s ~ 540)
set -euo pipefail
OUT=${OUT:-/tmp/costlab-out}
mkdir -p "$OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
python3 -m venv --system-site-packages /tmp/venv
. /tmp/venv/bin/activate
pip install --no-index --find-links shared/wheels -e . > "$OUT/install.log" 2>&1
export TVM_CUDA_COMPILE_MODE=nvcc
python experiments/gpu/bench_cublas.py --m 4096 --n 4096 --k 4096 > "$OUT/cublas.json"
python experiments/gpu/bench_cublas.py --m 1 --n 4096 --k 4096 >> "$OUT/cublas.json"
# A budget that fits the lease: 32 trials per workload and model.
timeout 420 costlab run experiments/llm-ops-cuda.yaml search.trials=32 search.trials_per_iter=32 \
    mlflow.tracking_uri=sqlite:///$OUT/mlflow.db work_dir=$OUT/runs > "$OUT/run.log" 2>&1 || true
costlab compare llm-ops-cuda --tracking-uri sqlite:///$OUT/mlflow.db --out "$OUT/results" > "$OUT/compare.txt" 2>&1 || true
