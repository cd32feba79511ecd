#!/usr/bin/env bash
# The soak (docs/BENCHMARKS.md, "An hour of chat"): the desktop app's core, headless
# (tests/app/longread_crash_driver: the app's settings, database, engine thread and prefix
# cache), runs chat turns for DURATION seconds — new and older conversations, documents read
# into the cache or restored from the prefix cache, questions, summaries — with H2O eviction,
# tiers small enough that blocks spill to disk, and the prefix cache, on a random-weight
# TinyLlama-1.1B at Q4_0. Every INTERVAL seconds it samples the process's resident memory
# and open file descriptors; at the end it prints them, and the growth from the first sample
# after WARMUP seconds to the last.
# Usage: [DURATION=3600] [INTERVAL=60] [WARMUP=300] [THREADS=2] scripts/soak.sh [WORKDIR]
# (default /tmp/longread-soak; the model is made there once and kept)
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-build/app/cli/longread-cli}
DRIVER=${DRIVER:-build/tests/app/longread_crash_driver}
TEXT=${TEXT:-../shared/data/text/tinystories_style_eval.txt}
WORK=${1:-/tmp/longread-soak}
DURATION=${DURATION:-3600}
INTERVAL=${INTERVAL:-60}
WARMUP=${WARMUP:-300}
THREADS=${THREADS:-2}
for tool in "$CLI" "$DRIVER"; do
  [ -x "$tool" ] || { echo "soak: $tool is not built (cmake --build --preset default)" >&2; exit 1; }
done

mkdir -p "$WORK"
MODEL="$WORK/tinyllama-1.1b-q4_0.gguf"
[ -f "$MODEL" ] || "$CLI" make-model --preset tinyllama-1.1b --type Q4_0 -o "$MODEL" >&2
RUN="$WORK/run"
rm -rf "$RUN"
mkdir -p "$RUN/docs" "$RUN/config/Longread"

# Documents: three of about 2,700 characters, the source's paragraphs from three starting
# points, and the whole source (too long for the context: summarized map-reduce).
for start in 0 4 8; do
  awk -v RS= -v start="$start" '{ p[NR] = $0 } END {
    out = ""; for (k = 0; k < NR; ++k) { q = p[(start + k) % NR + 1]; if (length(out) + length(q) > 2700) break; out = out q "\n\n" }
    printf "%s", out }' "$TEXT" > "$RUN/docs/doc-$start.txt"
done
cp "$TEXT" "$RUN/docs/doc-long.txt"

# The app's settings: the model, H2O at 30 %, a device and a host tier of 4 MiB each (the
# KV of ~180 tokens each: the rest of a 2,048-token context spills to disk), 256 MiB of
# disk for the spill files and the prefix cache, replies of up to 256 tokens.
cat > "$RUN/config/Longread/Longread.conf" <<EOF
[model]
last=$(realpath "$MODEL")

[engine]
threads=$THREADS
defaults="{\"contextTokens\": 2048, \"maxReplyTokens\": 256, \"temperature\": 0.8, \"policy\": \"h2o\", \"keepRatio\": 0.3, \"deviceMiB\": 4, \"hostMiB\": 4, \"diskMiB\": 256}"
EOF

export XDG_CONFIG_HOME="$RUN/config" XDG_DATA_HOME="$RUN/data" XDG_CACHE_HOME="$RUN/cache"
"$DRIVER" "$RUN/docs" 7 > "$RUN/driver.log" 2> "$RUN/driver.err" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status"; }
fds() { ls "/proc/$PID/fd" | wc -l; }
count() { grep -c "^[0-9]* $1" "$RUN/driver.log" || true; }

echo "| minute | resident MiB | open files | replies finished | documents read | prefix cache MiB |"
echo "|---|---|---|---|---|---|"
first_rss="" first_fds="" min_fds="" max_fds=0
start=$(date +%s)
while :; do
  sleep "$INTERVAL"
  kill -0 $PID 2>/dev/null || { echo "soak: the driver exited (see $RUN/driver.err)" >&2; exit 1; }
  elapsed=$(( $(date +%s) - start ))
  rss=$(rss_kib) n_fds=$(fds)
  prefix=$(du -sm "$RUN/cache" 2>/dev/null | cut -f1)
  echo "| $((elapsed / 60)) | $((rss / 1024)) | $n_fds | $(count reply-finished) | $(count doc-ready) | $prefix |"
  if [ "$elapsed" -ge "$WARMUP" ]; then
    [ -n "$first_rss" ] || { first_rss=$rss; first_fds=$n_fds; min_fds=$n_fds; }
    [ "$n_fds" -lt "$min_fds" ] && min_fds=$n_fds
    [ "$n_fds" -gt "$max_fds" ] && max_fds=$n_fds
    last_rss=$rss last_fds=$n_fds
  fi
  [ "$elapsed" -ge "$DURATION" ] && break
done

echo
echo "resident memory after the warm-up: $((first_rss / 1024)) MiB -> $((last_rss / 1024)) MiB at the end" \
  "($(awk -v a="$first_rss" -v b="$last_rss" 'BEGIN { printf "%+.2f %%", 100 * (b - a) / a }'))"
echo "open files after the warm-up: $first_fds -> $last_fds (between $min_fds and $max_fds)"
echo "replies finished $(count reply-finished), documents read $(count doc-ready)," \
  "errors $(count error), cache faults $(count cache-fault), storage failures $(count storage-failed)"
