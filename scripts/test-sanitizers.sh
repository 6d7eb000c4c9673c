#!/usr/bin/env bash
# The sanitizer pass: builds the tests of the code that parses outside input or runs concurrently
# (the "sanitize" label; the choice is in docs/testing.md) with AddressSanitizer +
# UndefinedBehaviorSanitizer into build-asan/ (a second build directory; -O1, line tables only)
# and runs them under ctest: the unit tests of those modules, the end-to-end tests of the real
# binary (bench, sweeps, serve-sim's threads, hostile servers, signals, Slurm) and the fuzz-corpus
# replays. Any sanitizer report ends the process that made it with an error, so the test that ran
# it fails. CI runs this after ./scripts/test.sh (.ci/run); arguments go to ctest.
# Warnings are not errors here even in CI: with the sanitizers g++ 12 warns falsely inside
# libstdc++'s <regex> and Asio (-Wmaybe-uninitialized, -Wmismatched-new-delete); the main build
# (scripts/test.sh) is the one that holds the code to -Werror.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/stage.sh
source scripts/lib/stage.sh
./scripts/install-deps.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DINFERBENCH_SANITIZE=address,undefined -DINFERBENCH_BUILD_BENCH=OFF \
  -DINFERBENCH_WERROR=OFF >/dev/null
stage "build (sanitizers)" cmake --build build-asan -j "${JOBS:-$(nproc)}" --target ib_sanitize_suite
# The unit-test executables run whole write their cases here (CMakeLists.txt, ib_tests): only
# this run's.
rm -rf build-asan/gtest
# Leaks are reported at exit (LeakSanitizer, part of ASan); halt on the first report of any kind.
# verify_asan_link_order=0: the environment tracer (a plain C library) is LD_PRELOADed into
# serve-sim, an ASan binary, by the verify tests: the order check would
# refuse that, though a preloaded library without its own ASan runtime is supported.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:strict_string_checks=1:check_initialization_order=1:verify_asan_link_order=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}"
junit=()
if [ -n "${IB_JUNIT_DIR:-}" ]; then junit=(--output-junit "$IB_JUNIT_DIR/sanitizers.xml"); fi
# The slowest start first, by this pass's own timings (a sanitized test's cost is not its main-pass
# cost: CliInput takes 7 s there and 160 s here).
export IB_TEST_COSTS="${IB_TEST_COSTS:-$PWD/tests/ctest-costs-sanitizers.txt}"
stage "tests (sanitizers)" ./scripts/ctest.sh build-asan -L sanitize --timeout 600 "${junit[@]}" "$@"
