#!/usr/bin/env bash
# Installs what is missing, builds Longread and starts it with the bundled model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default
cmake --build --preset default
exec ./build/app/cli/longread-cli chat "$@"
