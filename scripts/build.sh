#!/usr/bin/env bash
# Configures and builds inferbench (all targets: tool, tests, benchmarks) into ./build.
# INFERBENCH_WERROR=ON (CI) makes compiler warnings errors; it is passed on every configure, so a
# value cached by an earlier run never sticks. BUILD_TYPE and JOBS as named.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DINFERBENCH_WERROR="${INFERBENCH_WERROR:-OFF}" >/dev/null
cmake --build build -j "$jobs"
