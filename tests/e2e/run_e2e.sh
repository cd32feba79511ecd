#!/usr/bin/env bash
# ctest's test_e2e_openai: installs the pinned openai npm package (package-lock.json) into WORK_DIR
# in the build tree, never into the source tree, and runs openai_e2e.mjs there against
# LONGREAD_CLI.
#   tests/e2e/run_e2e.sh LONGREAD_CLI WORK_DIR
# Exits 77, which ctest reports as skipped, when node (18 or newer), npm or curl is missing or
# npm cannot reach its registry (or cannot verify it: an untrusted proxy between); any other
# failure is a failure.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: run_e2e.sh LONGREAD_CLI WORK_DIR" >&2; exit 2; }
cli=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)

skip() {
  echo "SKIPPED: $*" >&2
  exit 77
}

[ -x "$cli" ] || { echo "run_e2e.sh: $cli is not an executable: build longread-cli first" >&2; exit 1; }
for tool in node npm curl; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not found (sudo apt-get install nodejs npm curl, or scripts/install-deps.sh)"
done
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || skip "node $(node --version) is older than 18, which the test needs"

mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/openai_e2e.mjs" "$work/"
# npm ci again only when the lockfile changed since the last install.
if ! cmp -s "$work/package-lock.json" "$work/node_modules/.installed-lock.json" 2>/dev/null; then
  # Bounded waits, so that a registry behind a black hole is a skip, not ctest's timeout.
  if ! log=$(cd "$work" && npm ci --no-audit --no-fund --fetch-timeout=30000 --fetch-retries=1 --fetch-retry-maxtimeout=10000 2>&1); then
    echo "$log" >&2
    case "$log" in
      *ENOTFOUND* | *EAI_AGAIN* | *ECONNREFUSED* | *ECONNRESET* | *ETIMEDOUT* | *ENETUNREACH* | *EHOSTUNREACH* | *ERR_SOCKET_TIMEOUT* | *network* | *"socket hang up"*)
        skip "npm ci cannot reach the npm registry to install the openai package" ;;
    esac
    # A proxy between here and the registry that this system's certificates do not trust
    # (a company's TLS inspection, a sandbox): the registry cannot be reached securely.
    case "$log" in
      *SELF_SIGNED_CERT_IN_CHAIN* | *UNABLE_TO_GET_ISSUER_CERT* | *UNABLE_TO_VERIFY_LEAF_SIGNATURE* | *CERT_UNTRUSTED* | *DEPTH_ZERO_SELF_SIGNED_CERT*)
        skip "npm ci cannot verify the npm registry's certificate (a proxy this system does not trust): set npm's cafile to reach it" ;;
    esac
    echo "run_e2e.sh: npm ci failed in $work" >&2
    exit 1
  fi
  cp "$work/package-lock.json" "$work/node_modules/.installed-lock.json"
fi

cd "$work"
exec node openai_e2e.mjs "$cli"
