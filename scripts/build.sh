#!/usr/bin/env bash
# Configures and builds inferbench into ./build. With no argument it builds every target (tool,
# tests, benchmarks); with target names (`./scripts/build.sh inferbench`) only those and what they
# depend on. INFERBENCH_WERROR=ON (CI) makes compiler warnings errors; it is passed on every
# configure, so a value cached by an earlier run never sticks. BUILD_TYPE and JOBS as named.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DINFERBENCH_WERROR="${INFERBENCH_WERROR:-OFF}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j "$jobs" "${targets[@]}"
