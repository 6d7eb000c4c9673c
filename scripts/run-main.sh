#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, and run the bundled concurrency
# sweep against the embedded simulated engine. Extra arguments go to `inferbench sweep`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
exec ./build/src/inferbench sweep "$@"
