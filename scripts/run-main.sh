#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build the tool (only `inferbench` and the
# environment-tracer assets it depends on, not the tests), and run the bundled concurrency sweep
# against the embedded simulated engine. Extra arguments go to `inferbench sweep`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh inferbench
exec ./build/src/inferbench sweep "$@"
