#!/usr/bin/env bash
# Install dependencies, build everything, and run every test (unit and end-to-end) under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 300 "$@"
