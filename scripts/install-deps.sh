#!/usr/bin/env bash
# Installs the Debian / Ubuntu packages Longread builds with, when any is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git file clang libclang-rt-14-dev clang-format
  qt6-base-dev qt6-base-dev-tools libqt6opengl6-dev libxkbcommon-dev qt6-svg-dev libqt6sql6-sqlite libqt6svg6
  libsentencepiece-dev libicu-dev libsqlite3-dev libpoppler-qt6-dev libxxhash-dev libbenchmark-dev
  libcpp-httplib-dev nlohmann-json3-dev
  fonts-dejavu-core xvfb xauth rpm
  nodejs npm curl
)
missing=()
for p in "${packages[@]}"; do
  # NodeSource's nodejs carries its own npm and conflicts with Debian's npm package.
  [ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
