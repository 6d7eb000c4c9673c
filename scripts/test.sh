#!/usr/bin/env bash
# Install dependencies, build everything, and run every test (unit and end-to-end) under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# A one-node Slurm cluster for the Slurm end-to-end tests (needs root). Without it those tests
# skip, unless IB_REQUIRE_SLURM=1 (CI), where they fail.
if [ "$(id -u)" -eq 0 ]; then
  ./scripts/slurm-up.sh || [ "${IB_REQUIRE_SLURM:-0}" != 1 ]
else
  echo "test: not root, so no Slurm test cluster; the Slurm tests will skip"
fi
./scripts/build.sh
ctest --test-dir build --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 300 "$@"
