#!/usr/bin/env bash
# The KV-cache benchmarks of docs/BENCHMARKS.md on a random-weight TinyLlama-1.1B-shaped
# Q4_0 model (written here by make-model, with a trained context of 32K so that long
# contexts are legal), 2 threads:
#   tiers    a small device tier (64 MiB, about 2,900 tokens of f16 KV) with host RAM and
#            disk behind it, at each context of KV_CONTEXTS: what stays on the device tier,
#            where the rest went, the hit rate, prefill time and decode speed; the prefix
#            cache persists the prompt on the way
#   restore  the same prompt again in a new process: restored from the prefix cache
#            instead of prefilled, at each context of RESTORE_CONTEXTS
#   policy   decode speed and KV bytes of the full cache vs h2o 20% (+ q8 K/V) at each
#            context of POLICY_CONTEXTS
# Usage: scripts/bench_kv.sh [WORKDIR]  (default /tmp/longread-bench; about 3 GB of disk).
# Prints markdown tables; every run's stats JSON and stderr stay in WORKDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-build/app/cli/longread-cli}
WORK=${1:-/tmp/longread-bench}
VOCAB=${VOCAB:-../shared/models/llama-2-tiny-random.gguf}
TEXT=${TEXT:-../shared/data/text/tinystories_style_eval.txt}
THREADS=${THREADS:-2}
# (a list of one space skips a part)
KV_CONTEXTS=${KV_CONTEXTS:-"2048 4096 8192 16384"}
RESTORE_CONTEXTS=${RESTORE_CONTEXTS:-"4096 16384"}
POLICY_CONTEXTS=${POLICY_CONTEXTS:-"4096 8192"}
mkdir -p "$WORK"
MODEL="$WORK/tinyllama-32k-q4_0.gguf"
[ -f "$MODEL" ] || "$CLI" make-model --preset tinyllama-1.1b --type Q4_0 --ctx-train 32768 --vocab-from "$VOCAB" -o "$MODEL" >&2

source scripts/bench_prompt.sh  # prompt_of N

# generate NAME CTX N_GEN ARGS...: one run; its stats in $WORK/NAME.json, stderr in $WORK/NAME.err.
generate() {
  local name=$1 ctx=$2 n_gen=$3; shift 3
  local n_ctx=$((ctx + 64 > 32768 ? 32768 : ctx + 64))  # the prompts leave room below the trained context
  "$CLI" generate -m "$MODEL" -t "$THREADS" -f "$(prompt_of "$ctx")" -c "$n_ctx" -n "$n_gen" --temp 0 \
    --kv-stats-json "$WORK/$name.json" "$@" > /dev/null 2> "$WORK/$name.err"
}

# summary NAME FIELD: prompt_tokens, prefill_ms, decode_tok_s, from the last line of stderr.
summary() {
  python3 - "$WORK/$1.err" "$2" <<'EOF'
import re, sys
line = [l for l in open(sys.argv[1]) if " tokens in " in l][-1]
m = re.search(r"prompt (\d+) tokens in ([\d.]+) ms.*generated (\d+) tokens in ([\d.]+) ms \(([\d.]+) tok/s\)", line)
print({"prompt_tokens": m.group(1), "prefill_ms": m.group(2), "decode_tok_s": m.group(5)}[sys.argv[2]])
EOF
}

stat() { python3 -c "import json,sys; d=json.load(open('$WORK/$1.json')); print($2)"; }
# tier RUN NAME: what that tier of the run holds, in MiB.
tier() { stat "$1" "'%.1f MiB' % (next(t for t in d['tiers'] if t['name'] == '$2')['used_bytes'] / 2**20)"; }

echo "### Tiers: a 64 MiB device tier under a growing context"
echo
echo "| prompt tokens | device tier | host tier | disk tier | hit rate | prefetched in time | prefill s | decode tok/s |"
echo "|---|---|---|---|---|---|---|---|"
for ctx in $KV_CONTEXTS; do
  rm -rf "$WORK/kv-$ctx"
  generate "tiers-$ctx" "$ctx" 32 --kv-device-mib 64 --kv-host-mib 128 --kv-disk-mib 8192 --kv-dir "$WORK/kv-$ctx"
  echo "| $(summary "tiers-$ctx" prompt_tokens) | $(tier "tiers-$ctx" device) | $(tier "tiers-$ctx" host) | $(tier "tiers-$ctx" disk) |" \
       "$(stat "tiers-$ctx" "'%.1f%%' % (100 * d['block_hits'] / max(1, d['block_reads']))") |" \
       "$(stat "tiers-$ctx" "'%d of %d' % (d['prefetch_hits'], d['prefetches'])") |" \
       "$(python3 -c "print('%.1f' % ($(summary "tiers-$ctx" prefill_ms) / 1000))") | $(summary "tiers-$ctx" decode_tok_s) |"
done
echo
echo "### Restore from disk vs prefill"
echo
echo "| prompt tokens | prefill s (cold) | restore s (new process) | tokens restored | speed-up |"
echo "|---|---|---|---|---|"
for ctx in $RESTORE_CONTEXTS; do
  [ -f "$WORK/tiers-$ctx.err" ] || { rm -rf "$WORK/kv-$ctx"; generate "tiers-$ctx" "$ctx" 32 --kv-device-mib 64 --kv-host-mib 128 --kv-disk-mib 8192 --kv-dir "$WORK/kv-$ctx"; }
  generate "restore-$ctx" "$ctx" 32 --kv-device-mib 64 --kv-host-mib 128 --kv-disk-mib 8192 --kv-dir "$WORK/kv-$ctx"
  cold=$(summary "tiers-$ctx" prefill_ms) warm=$(summary "restore-$ctx" prefill_ms)
  echo "| $(summary "restore-$ctx" prompt_tokens) | $(python3 -c "print('%.1f' % ($cold / 1000))") | $(python3 -c "print('%.2f' % ($warm / 1000))") |" \
       "$(stat "restore-$ctx" "d['restored_tokens']") | $(python3 -c "print('%.0fx' % ($cold / $warm))") |"
done
echo
echo "### Policies: decode speed and KV bytes, full cache vs h2o 20%"
echo
echo "| prompt tokens | run | KV bytes | of full f16 | decode tok/s | vs full |"
echo "|---|---|---|---|---|---|"
for ctx in $POLICY_CONTEXTS; do
  generate "full-$ctx" "$ctx" 64 --no-prefix-cache
  generate "h2o-$ctx" "$ctx" 64 --no-prefix-cache --kv-policy h2o --keep-ratio 0.2
  generate "h2o-q8-$ctx" "$ctx" 64 --no-prefix-cache --kv-policy h2o --keep-ratio 0.2 --kv-k-bits 8 --kv-v-bits 8
  full_bytes=$(stat "full-$ctx" "sum(t['used_bytes'] for t in d['tiers'])")
  full_speed=$(summary "full-$ctx" decode_tok_s)
  for run in full h2o h2o-q8; do
    bytes=$(stat "$run-$ctx" "sum(t['used_bytes'] for t in d['tiers'])")
    speed=$(summary "$run-$ctx" decode_tok_s)
    echo "| $(summary "$run-$ctx" prompt_tokens) | $run | $(python3 -c "print('%.1f MiB' % ($bytes / 2**20))") |" \
         "$(python3 -c "print('%.1f%%' % (100 * $bytes / $full_bytes))") | $speed | $(python3 -c "print('%.2fx' % ($speed / $full_speed))") |"
  done
done
