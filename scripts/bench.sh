#!/usr/bin/env bash
# Builds and runs every micro-benchmark under bench/, printing figures (never pass/fail).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
for b in build/bench/*_bench; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" --benchmark_min_time=0.2 "$@"
done
echo "== client scale and fidelity"
./bench/client_scale.sh
echo "== client cost per event, fidelity at 100 / 1,000 / 16,000 streams, kernel floor"
./bench/client_cost.sh
