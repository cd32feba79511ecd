#!/usr/bin/env bash
# The newcomer's machine, checked. Bootstraps a minimal Debian 12 (debootstrap, minbase) in a
# temporary folder, clones this repository into it with a copy of the reference data beside
# it (../shared), and runs the README's two set-up commands as the README writes them: the
# test command, then the launch command under Xvfb, with a screenshot once the window is up.
# Then it installs the Debian package built there into a second, untouched copy of the fresh
# system with `apt install ./longread_*.deb`, and runs `longread-cli` and `longread` from it.
# Each step is reported with its time; the exit status is the first failure's, or 75 when
# the fresh system could not be made at all (not root, or no Debian mirror reachable).
#
# Usage (as root): scripts/fresh-machine-check.sh [OUTPUT_DIR]
#   OUTPUT_DIR (default build-fresh-check): the screenshots and each step's log.
#   LONGREAD_SHARED_DIR: the reference data (default: ../shared beside the repository).
#   FRESH_KEEP=1 keeps the bootstrapped folders (their path is printed).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$repo/build-fresh-check}" && cd "${1:-$repo/build-fresh-check}" && pwd)
shared=$(cd "${LONGREAD_SHARED_DIR:-$repo/../shared}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "run as root: debootstrap and chroot need it" >&2; exit 75; }

# The README's set-up commands: the first installs, builds and launches; the second tests.
mapfile -t setup < <(awk '/^## Set up/{s=1; next} /^## /{s=0} s && /^scripts\//{print $1}' "$repo/README.md")
[ ${#setup[@]} -eq 2 ] || { echo "README.md's Set up section should hold two commands, found: ${setup[*]}" >&2; exit 1; }
launch_command=${setup[0]} test_command=${setup[1]}

work=$(mktemp -d /var/tmp/longread-fresh.XXXXXX)
fresh=$work/fresh      # the newcomer's machine
pristine=$work/package # an untouched copy, for the package
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  if [ "${FRESH_KEEP:-0}" = 1 ]; then
    echo "kept: $work"
  elif findmnt -rn -o TARGET | grep -q "^$work/"; then
    echo "not removing $work: something is still mounted under it" >&2
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT

steps=()
# step NAME COMMAND...: runs it, logs to OUTPUT_DIR/NAME.log, records the time and result.
step() {
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "=== $name"
  "$@" >"$out/$name.log" 2>&1 || rc=$?
  local took=$((SECONDS - t0))
  steps+=("$(printf '%-22s %-6s %5d s' "$name" "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "$took")")
  if [ $rc -ne 0 ]; then
    # Qt Test's own lines say which check failed and where (CI keeps only the tail).
    grep -E -A1 "^(FAIL!|XPASS|QFATAL)" "$out/$name.log" | tail -n 40 || true
    tail -n 40 "$out/$name.log"
    report
    exit $rc
  fi
}
report() {
  echo "=== fresh machine check ($out)"
  printf '%s\n' "${steps[@]}"
}

bootstrap() {
  local mirror
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; }
  debootstrap --variant=minbase bookworm "$fresh" ${mirror:+"$mirror"} || return 75
  [ -f /etc/apt/sources.list.d/debian.sources ] && cp /etc/apt/sources.list.d/debian.sources "$fresh/etc/apt/sources.list.d/"
  cp -a "$fresh" "$pristine"
}

# mount_system ROOT: what a running system offers its programs (processes, devices).
mount_system() {
  local d
  for d in proc sys dev dev/pts dev/shm; do
    mkdir -p "$1/$d"
    mount --bind "/$d" "$1/$d"
    mounted+=("$1/$d")
  done
}

# in ROOT COMMAND: runs COMMAND (bash) in the fresh system ROOT as its root user would.
in_root() {
  chroot "$1" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive bash -euo pipefail -c "$2"
}

# The tools the check itself uses to find the window and take its picture (not Longread's).
harness_tools() { in_root "$1" "apt-get update -qq && apt-get install -y -qq --no-install-recommends xvfb xauth x11-utils x11-apps netpbm procps"; }

# window_shot ROOT DIR PNG COMMAND: starts COMMAND under Xvfb in ROOT (from DIR), waits for a
# window named Longread, lets it paint, saves the screen to ROOT/PNG, and checks that the app
# opened its conversation database.
window_shot() {
  in_root "$1" "cd $2 && xvfb-run -a -s '-screen 0 1440x900x24' bash -c '
    setsid $4 & app=\$!
    for i in \$(seq 600); do
      xwininfo -root -tree | grep -qi \"\\\"longread\" && break
      kill -0 \$app 2>/dev/null || { echo \"the app exited before its window appeared\"; exit 1; }
      sleep 1
    done
    xwininfo -root -tree | grep -qi \"\\\"longread\" || { echo \"no Longread window after 10 minutes\"; exit 1; }
    sleep 5
    kill -0 \$app || { echo \"the app exited after its window appeared\"; exit 1; }
    xwininfo -root -tree | grep -i longread
    xwd -root -silent | xwdtopnm 2>/dev/null | pnmtopng > $3
    kill -- -\$app'
    ls -l /root/.local/share/Longread/Longread/conversations.sqlite"
}

clone() {
  mkdir -p "$fresh/home/newcomer"
  git clone -q "$repo" "$fresh/home/newcomer/project"
  cp -r "$shared" "$fresh/home/newcomer/shared"
}

package() {
  in_root "$fresh" "cd /home/newcomer/project/build && cpack -G DEB -B /home/newcomer/package"
  cp "$fresh"/home/newcomer/package/longread_*.deb "$pristine/tmp/"
}

install_package() {
  in_root "$pristine" "apt-get update -qq && apt-get install -y -qq --no-install-recommends ./tmp/longread_*.deb && dpkg -s longread | grep -E '^(Version|Depends)'"
}

programs_run() {
  in_root "$pristine" "longread-cli --version && longread-cli generate -p 'Once upon a time' -n 24 --seed 1 &&
    QT_QPA_PLATFORM=offscreen longread --version"
}

bootstrap_rc=0
t0=$SECONDS
echo "=== bootstrap"
bootstrap >"$out/bootstrap.log" 2>&1 || bootstrap_rc=$?
if [ $bootstrap_rc -ne 0 ]; then
  tail -n 20 "$out/bootstrap.log"
  echo "could not bootstrap a fresh Debian 12 (see $out/bootstrap.log)" >&2
  exit 75
fi
steps+=("$(printf '%-22s %-6s %5d s' bootstrap ok $((SECONDS - t0)))")
mount_system "$fresh"
mount_system "$pristine"
step clone clone
step readme-test in_root "$fresh" "cd /home/newcomer/project && $test_command"
step harness-tools harness_tools "$fresh"
step readme-launch window_shot "$fresh" /home/newcomer/project /home/newcomer/launch.png "$launch_command"
cp "$fresh/home/newcomer/launch.png" "$out/launch.png"
step package package
step package-install install_package
step package-programs programs_run
step package-tools harness_tools "$pristine"
step package-launch window_shot "$pristine" /root /root/package.png longread
cp "$pristine/root/package.png" "$out/package.png"
report
