#!/usr/bin/env bash
# Installs what is missing, builds Longread and starts the desktop app (with the bundled
# model the first time; the last model used afterwards). Arguments go to the app:
#   scripts/longread.sh [document.pdf] [-m model.gguf]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default
cmake --build --preset default --target longread longread-cli
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  echo "No display found (DISPLAY / WAYLAND_DISPLAY are not set): the desktop app needs one." >&2
  echo "Run it under a desktop session, or use the command line: ./build/app/cli/longread-cli chat" >&2
  exit 1
fi
exec ./build/app/longread "$@"
