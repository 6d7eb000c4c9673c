#!/usr/bin/env bash
# Runs ctest in the build folder $1 (the rest of the arguments go to ctest) with the suite's
# schedule (docs/testing.md): IB_TEST_JOBS tests at a time, twice the core count by default, since
# most end-to-end tests wait on a simulated server rather than compute. The slowest tests start
# first: a build folder that has no timings of its own yet starts from tests/ctest-costs.txt (the
# seconds each test took in a CI run; IB_TEST_COSTS names another, as the sanitizer pass does),
# so that the last test to finish is not a long one started late.
set -euo pipefail
dir="$1"
shift
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${IB_TEST_JOBS:-$(($(nproc) * 2))}"
costs="$dir/Testing/Temporary/CTestCostData.txt"
seed="${IB_TEST_COSTS:-$root/tests/ctest-costs.txt}"
if [ ! -s "$costs" ] && [ -f "$seed" ]; then
  mkdir -p "$(dirname "$costs")"
  grep -v '^#' "$seed" >"$costs"
  echo "---" >>"$costs"
fi
exec ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@"
