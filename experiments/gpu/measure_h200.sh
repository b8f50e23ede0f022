#!/usr/bin/env bash
# One prepared script for a lent H200 machine: the device tool runs it in a copy of the
# working tree, and what it leaves in $OUT comes back (at most 8 files, 16 MiB each).
# The machine's Python 3.12 has torch, numpy, scipy, pandas and the like, but not TVM,
# MLflow, LightGBM or xgboost, and it cannot reach the network: stage those as wheels
# first (experiments/gpu/stage_wheels.sh here, then keep_part.sh for every part but the
# last), and run this with the last part carried:
#   run(carry=[".whl/N"], command="RUN_S=420 bash experiments/gpu/measure_h200.sh", timeout_s=540)
# It tunes the LLM suite with tvm-xgb and lgbm at 32 trials each for at most RUN_S seconds
# (set it from the device time left: the script needs about RUN_S + 90 s), times
# torch.matmul (cuBLAS) fp16 GEMMs for the ratio, and brings back the tuning databases and
# the MLflow store in runs.tar.gz. A broken install stops it within a minute (smoke.txt),
# so that the device time left can pay for a second try. On 2026-12-04 (the first run,
# experiments/results/llm-ops-cuda-h200.md) the machine started in about 30 s, each part
# call took under a second, and install, smoke check and cuBLAS took 36 s together.
# TUNE_WORKLOADS: a YAML list to tune instead of the config's workloads, e.g. those still
# owed after that run (experiments/results/llm-ops-cuda-h200.md, "Still owed", has it).
set -euo pipefail
OUT=${OUT:-/tmp/costlab-out}
RUN_S=${RUN_S:-420}
mkdir -p "$OUT"
step() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*"; }
step "start; tuning gets ${RUN_S} s"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true

# Gather the staged wheels (kept parts and the carried last one), check them, rejoin the
# wheels that were cut into pieces, and install them beside the image's packages.
mkdir -p /tmp/wheels
cp /tmp/whlkeep/* /tmp/wheels/ 2>/dev/null || true  # keep_part.sh
for d in .whl/*/; do cp "$d"* /tmp/wheels/ 2>/dev/null || true; done  # the carried part (checked below)
(cd /tmp/wheels && sha256sum --check --quiet SHA256SUMS.pieces) > "$OUT/install.log" 2>&1
(cd /tmp/wheels && for first in *.whl.piece-00; do
   [ -e "$first" ] || continue
   cat "${first%-00}"-?? > "${first%.piece-00}" && rm "${first%-00}"-??
 done)
if ! python3 -m pip install --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    /tmp/wheels/*.whl >> "$OUT/install.log" 2>&1; then
  step "install failed"; tail -20 "$OUT/install.log"; exit 3
fi
export PYTHONPATH=/tmp/site:$PWD
step "installed"

export TVM_CUDA_COMPILE_MODE=nvcc
if ! python3 - > "$OUT/smoke.txt" 2>&1 <<'PY'
import platform, subprocess
import lightgbm, mlflow, tvm, xgboost
import costlab.cli  # noqa: F401
print("python", platform.python_version(), "tvm", tvm.__version__, "mlflow", mlflow.__version__)
print("cuda enabled", tvm.runtime.enabled("cuda"), "device exists", tvm.cuda(0).exist,
      "compute", tvm.cuda(0).compute_version)
print(subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1])
PY
then
  step "smoke check failed"; cat "$OUT/smoke.txt"; tail -20 "$OUT/install.log"; exit 3
fi
cat "$OUT/smoke.txt"
step "smoke check ok"
python3 experiments/gpu/bench_cublas.py --m 4096 --n 4096 --k 4096 > "$OUT/cublas.json" || true
python3 experiments/gpu/bench_cublas.py --m 1 --n 4096 --k 4096 >> "$OUT/cublas.json" || true
step "cuBLAS timed"; cat "$OUT/cublas.json"
mkdir -p "$OUT/keep"
# The config's search uses all cores (num_tuning_cores: all): with one thread, the default, the
# 4096³ tensor-core GEMM spent 170 of its 221 s in the search on the H200 machine (2026-12-04).
timeout "$RUN_S" python3 -m costlab run experiments/llm-ops-cuda.yaml search.trials=32 search.trials_per_iter=32 \
    ${TUNE_WORKLOADS:+"workloads=$TUNE_WORKLOADS"} \
    mlflow.tracking_uri=sqlite:///$OUT/keep/mlflow.db work_dir=$OUT/keep/runs > "$OUT/run.log" 2>&1 || true
python3 -m costlab compare llm-ops-cuda --tracking-uri sqlite:///$OUT/keep/mlflow.db --out "$OUT/keep/results" \
    > "$OUT/compare.txt" 2>&1 || true
step "tuned and compared"
tar czf "$OUT/runs.tar.gz" -C "$OUT/keep" . && rm -rf "$OUT/keep"
tail -25 "$OUT/run.log"; tail -40 "$OUT/compare.txt"
step "done"
