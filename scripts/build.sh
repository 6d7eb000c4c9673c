#!/usr/bin/env bash
# Configures and builds inferbench into ./build. With no argument it builds every target (tool,
# tests, benchmarks); with target names (`./scripts/build.sh inferbench`) only those and what they
# depend on. INFERBENCH_WERROR=ON (CI) makes compiler warnings errors. IB_DEBUG_INFO=lines (the
# default) keeps line tables only (-g1: backtraces and sanitizer reports keep file and line, and
# the build takes about 40% less time than with full debug information); IB_DEBUG_INFO=full gives
# gdb everything (-g). Both are passed on every configure, so a value cached by an earlier run
# never sticks. BUILD_TYPE and JOBS as named.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${JOBS:-$(nproc)}"
case "${IB_DEBUG_INFO:-lines}" in
  full) relwithdebinfo="-O2 -g -DNDEBUG" ;;
  lines) relwithdebinfo="-O2 -g1 -DNDEBUG" ;;
  *)
    echo "build: IB_DEBUG_INFO must be full or lines, not '${IB_DEBUG_INFO}'" >&2
    exit 2
    ;;
esac
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$relwithdebinfo" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$relwithdebinfo" \
  -DINFERBENCH_WERROR="${INFERBENCH_WERROR:-OFF}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j "$jobs" "${targets[@]}"
