#!/usr/bin/env bash
# Installs what is missing, builds Longread and runs every test (ctest labels unit, model,
# gui, gpu, slow; gpu tests skip without a device), then a short libFuzzer run of each
# reader of untrusted input (tests/fuzz: GGUF, tokenizers, chat templates, server requests,
# settings JSON, documents).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default
cmake --build --preset default
ctest --preset default
cmake --preset fuzz
cmake --build --preset fuzz
ctest --preset fuzz
