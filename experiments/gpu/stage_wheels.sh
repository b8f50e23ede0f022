#!/usr/bin/env bash
# Stage the Python packages that the H200 image lacks, as wheels for its Python 3.12,
# in carry folders small enough for the device tool.
#
# Why staging: the device tool sends the working tree plus carried paths, 64 MiB a call.
# The tree is ~480 MiB with the committed tuning databases (2026-12-07) (3 MiB without them: run
# slim_tree.sh on first), and the apache-tvm 0.27 wheel alone is 96 MiB
# (libtvm_compiler.so is 259 MiB, already stripped), 143 MiB with the rest. So the wheels
# go over in several calls to one warm machine: each call carries one part folder and
# keeps it in /tmp/whlkeep/ there, which stays on the machine between calls
# (the machine goes back after 30 s idle: issue the calls back to back).
#
#   bash experiments/gpu/slim_tree.sh on            # here: the data stays home (3 parts, not 20+)
#   bash experiments/gpu/stage_wheels.sh            # here, with network; writes .whl/1 .. .whl/N
#   then, through the device tool, for each part k < N:
#       run(carry=[".whl/k"], command="bash experiments/gpu/keep_part.sh k", timeout_s=60)
#   and for the last part:
#       run(carry=[".whl/N"], command="bash experiments/gpu/measure_h200.sh", timeout_s=540)
#   bash experiments/gpu/slim_tree.sh off           # here, at once: the index as in HEAD again
#
# The versions are the ones the CPU test suite runs with (the dev venv's), for cp312.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude

# Everything costlab needs that the image (KINDS.md's package list) does not hold.
PACKAGES=(
  apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post0 xgboost-cpu==3.2.0 lightgbm==4.7.0
  tornado==6.6.1 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
  mlflow==3.17.2 mlflow-skinny==3.17.2 mlflow-tracing==3.17.2 alembic==1.20.1 mako==1.4.3
  sqlalchemy==2.1.9 sqlparse==0.6.1 flask==3.1.3 flask-cors==6.0.5 itsdangerous==2.2.0 blinker==1.9.0
  graphene==3.4.3 graphql-core==3.2.14 graphql-relay==3.2.0 gunicorn==26.2.0 huey==3.5.4
  docker==7.2.0 cachetools==7.3.3 databricks-sdk==0.162.0 google-auth==2.63.0 pyasn1==0.6.5
  pyasn1-modules==0.4.2 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12 fastapi==0.165.0
  starlette==1.10.0 uvicorn==0.54.0 gitpython==3.2.1 gitdb==4.0.12 smmap==5.0.3
  importlib-metadata==9.1.0 opentelemetry-api==1.45.2 opentelemetry-proto==1.45.2
  opentelemetry-sdk==1.45.2 opentelemetry-semantic-conventions==0.66b2 prettytable==3.18.0
  wcwidth==0.9.4 python-dotenv==1.2.4 skops==0.16.0
)
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux_2_5_x86_64 manylinux1_x86_64; do PLATFORMS+=(--platform "$p"); done

rm -rf .whl && mkdir -p .whl/all
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLATFORMS[@]}" -d .whl/all "${PACKAGES[@]}"

# Room per call: 64 MiB less the tree that travels (tracked and untracked-not-ignored files),
# less 4 MiB for what changes before the call.
TREE_MIB=$(( $(bash experiments/gpu/sent_bytes.sh) / 2**20 + 1 ))
PART_MIB=${1:-$((64 - TREE_MIB - 4))}
if (( PART_MIB < 4 )); then
  echo "the tree is ${TREE_MIB} MiB: no room left under the 64 MiB carry limit (slim_tree.sh on?)" >&2
  exit 1
fi

# Cut wheels larger than a part into pieces (reassembled by measure_h200.sh), then pack
# the pieces and wheels into part folders of at most PART_MIB each.
(cd .whl/all && for w in *.whl; do
   if (( $(stat -c %s "$w") > PART_MIB * 2**20 )); then
     split -b "$((PART_MIB - 1))M" -d -a 2 "$w" "$w.piece-" && rm "$w"
   fi
 done && sha256sum -- * > ../SHA256SUMS.pieces)
part=1 used=0
for f in $(ls -S .whl/all); do
  size=$(stat -c %s ".whl/all/$f")
  if (( used + size > PART_MIB * 2**20 )); then part=$((part + 1)) used=0; fi
  mkdir -p ".whl/$part" && mv ".whl/all/$f" ".whl/$part/" && used=$((used + size))
done
mv .whl/SHA256SUMS.pieces ".whl/$part/"
rmdir .whl/all
echo "tree ${TREE_MIB} MiB, parts of at most ${PART_MIB} MiB:"
du -sh .whl/*
echo "carry .whl/1 .. .whl/$part, one per call, the last with measure_h200.sh (see this script's header)"
