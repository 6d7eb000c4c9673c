#!/usr/bin/env bash
# Runs one libFuzzer target (fuzz/<TARGET>_fuzz.cc) for SECONDS of wall time, starting from its
# corpus, then merges the inputs that reached new code back into fuzz/corpus/TARGET (which ctest
# replays on every build). TARGET "all" runs every target for SECONDS each. Inputs that crash,
# leak, time out (-timeout, default 10 s) or exceed the memory limit (-rss_limit_mb, default
# 2048) are saved under fuzz/findings/TARGET/ and make the script exit 1.
#   scripts/fuzz.sh recipe 900
#   scripts/fuzz.sh all 60 -jobs=1          # extra arguments go to libFuzzer
# Builds with clang into build-fuzz/ (every C++ target instrumented, with ASan and UBSan);
# installs clang and its runtime from Debian when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]" >&2
  echo "targets: $(sed -n 's/^set(ib_fuzz_targets \(.*\))$/\1/p' fuzz/CMakeLists.txt)" >&2
  exit 2
fi
target="$1"
seconds="$2"
shift 2
case "$seconds" in '' | *[!0-9]*) echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;; esac
targets=$(sed -n 's/^set(ib_fuzz_targets \(.*\))$/\1/p' fuzz/CMakeLists.txt)
if [ "$target" = all ]; then
  selected=$targets
else
  case " $targets " in *" $target "*) selected=$target ;; *)
    echo "fuzz: no target '$target'; targets: $targets" >&2; exit 2 ;;
  esac
fi

if ! command -v clang++ >/dev/null || [ ! -x /usr/bin/time ] || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "fuzz: installing clang, libclang-rt-dev and time from Debian"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-dev time
fi
./scripts/install-deps.sh >/dev/null

build_targets=()
for t in $selected; do build_targets+=(--target "ib_fuzz_$t"); done
mkdir -p build-fuzz
# One build at a time in build-fuzz/, so several fuzzers can be started side by side. File by file
# (no unity batches): coverage reports name real files, and this build checks that every file
# includes what it uses, which a unity batch can hide (docs/testing.md).
(
  flock 9
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DINFERBENCH_FUZZ=ON -DINFERBENCH_UNITY_BUILD=OFF -DINFERBENCH_BUILD_TESTS=OFF \
    -DINFERBENCH_BUILD_BENCH=OFF >/dev/null
  cmake --build build-fuzz -j "${JOBS:-$(nproc)}" "${build_targets[@]}"
) 9>build-fuzz/.build.lock

status=0
for t in $selected; do
  corpus="fuzz/corpus/$t"
  work="build-fuzz/work/$t"
  findings="fuzz/findings/$t"
  mkdir -p "$corpus" "$work" "$findings"
  before=$(find "$corpus" -type f | wc -l)
  log="build-fuzz/work/$t.log"
  echo "fuzz: $t for $seconds s (log: $log)"
  start=$(date +%s)
  # CPU seconds of the fuzzing process alone, from its rusage (bash's `times` counts children).
  set +e
  /usr/bin/env time -f '%U %S' -o "build-fuzz/work/$t.cpu" \
    "build-fuzz/fuzz/ib_fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" "$@" "$work" "$corpus" \
    >"$log" 2>&1
  rc=$?
  set -e
  wall=$(( $(date +%s) - start ))
  cpu=$(awk '{printf "%.0f", $1 + $2}' "build-fuzz/work/$t.cpu" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # Keep only the inputs that reach code the corpus does not yet reach.
  "build-fuzz/fuzz/ib_fuzz_$t" -merge=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    "$corpus" "$work" >"build-fuzz/work/$t.merge.log" 2>&1 || true
  after=$(find "$corpus" -type f | wc -l)
  found=$(find "$findings" -type f | wc -l)
  echo "fuzz: $t: ${wall} s wall, ${cpu} CPU-s, ${execs:-?} inputs run, corpus $before -> $after files, findings: $found (exit $rc)"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    grep -m 5 -E "ERROR: |SUMMARY: |==[0-9]+==|runtime error" "$log" || true
    ls "$findings"
  fi
done
exit $status
