#!/usr/bin/env bash
# The adaptive mode (--kv-adapt) against fixed placement settings, docs/BENCHMARKS.md
# "KV cache tiers": every demotion order x prefetch depth, the RAM given to the device tier
# as a whole (the best fixed split), and --kv-adapt, on two workloads with tier budgets
# small enough that blocks move:
#   document  a long prompt (DOC_TOKENS) and DOC_GEN (64) decoded tokens; device 2 MiB (a layer and a
#             third), host 4 MiB, the rest (half the KV) on disk
#   chat      a short prompt (CHAT_TOKENS) and CHAT_GEN (128) decoded tokens; device 0.5 MiB (two and a
#             half layers), host 8 MiB
# on a random-weight model of the `tiny` preset with 8 layers (4 KiB of f16 KV per token:
# a shape whose KV outweighs its compute, so placement shows), 2 threads. REPEATS rounds,
# each round every setting once, so that ratios can be read within one round.
# Usage: [SETTINGS="default adapt ..."] [REPEATS=3] scripts/bench_kv_adapt.sh [WORKDIR]
# (default /tmp/longread-bench-adapt)
# Prints a markdown table per workload (medians over the rounds, and the ratio to the
# default within each round); every run's stats JSON and stderr stay in WORKDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-build/app/cli/longread-cli}
WORK=${1:-/tmp/longread-bench-adapt}
VOCAB=${VOCAB:-../shared/models/stories260K.gguf}
TEXT=${TEXT:-../shared/data/text/tinystories_style_eval.txt}
THREADS=${THREADS:-2}
REPEATS=${REPEATS:-3}
DOC_TOKENS=${DOC_TOKENS:-3000}
CHAT_TOKENS=${CHAT_TOKENS:-400}
DOC_GEN=${DOC_GEN:-64}
CHAT_GEN=${CHAT_GEN:-128}
mkdir -p "$WORK"
MODEL="$WORK/tiny-8l-16k.gguf"
[ -f "$MODEL" ] || "$CLI" make-model --preset tiny --layers 8 --ctx-train 16384 --vocab-from "$VOCAB" -o "$MODEL" >&2

source scripts/bench_prompt.sh  # prompt_of N

# default is cycle-1 (the default order and depth); device-all the same RAM on the device tier alone.
read -r -a SETTINGS <<< "${SETTINGS:-default cycle-0 cycle-2 lru-0 lru-1 lru-2 fifo-0 fifo-1 fifo-2 device-all adapt}"

# The flags of a setting on a workload: its tier budgets, then its placement.
flags_of() {
  local workload=$1 setting=$2 device host total
  if [ "$workload" = document ]; then device=2 host=4 total=6; else device=0.5 host=8 total=8.5; fi
  case $setting in
    default) echo "--kv-device-mib $device --kv-host-mib $host" ;;
    device-all) echo "--kv-device-mib $total --kv-host-mib 0.001" ;;  # the same RAM, all of it on the device tier
    adapt) echo "--kv-device-mib $device --kv-host-mib $host --kv-adapt" ;;
    *) echo "--kv-device-mib $device --kv-host-mib $host --kv-demotion ${setting%-*} --kv-prefetch ${setting#*-}" ;;
  esac
}

# run WORKLOAD SETTING ROUND: one generate; stats in WORKLOAD.SETTING.ROUND.json, stderr in .err.
run() {
  local workload=$1 setting=$2 round=$3 tokens n_gen
  if [ "$workload" = document ]; then tokens=$DOC_TOKENS n_gen=$DOC_GEN; else tokens=$CHAT_TOKENS n_gen=$CHAT_GEN; fi
  local name="$workload.$setting.$round"
  rm -rf "$WORK/kv-$name"
  # shellcheck disable=SC2046
  "$CLI" generate -m "$MODEL" -t "$THREADS" -f "$(prompt_of "$tokens")" -c $((tokens + n_gen + 64)) -n "$n_gen" --temp 0 \
    --no-prefix-cache $(flags_of "$workload" "$setting") --kv-disk-mib 512 --kv-dir "$WORK/kv-$name" \
    --kv-stats-json "$WORK/$name.json" > "$WORK/$name.out" 2> "$WORK/$name.err"
  rm -rf "$WORK/kv-$name"
}

for round in $(seq 1 "$REPEATS"); do
  for workload in document chat; do
    for setting in "${SETTINGS[@]}"; do run "$workload" "$setting" "$round"; done
  done
done

python3 - "$WORK" "$REPEATS" "${SETTINGS[@]}" <<'EOF'
import json, re, statistics, sys
work, repeats, settings = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(workload, setting, r):
    base = f"{work}/{workload}.{setting}.{r}"
    line = [l for l in open(base + ".err") if " tokens in " in l][-1]
    m = re.search(r"prompt (\d+) tokens in ([\d.]+) ms.*generated (\d+) tokens in ([\d.]+) ms \(([\d.]+) tok/s\)", line)
    d = json.load(open(base + ".json"))
    out = open(base + ".out").read()
    return {"prompt": int(m.group(1)), "prefill_s": float(m.group(2)) / 1000, "decode": float(m.group(5)),
            "hit": d["block_hits"] / max(1, d["block_reads"]), "moved": d["bytes_moved"] / 2**20,
            "wait": d["fetch_wait_ms"], "move_ms": d["move_ms"], "prefetch": d["prefetches"],
            "decisions": d["adapt_decisions"], "text": out}
for workload in ("document", "chat"):
    runs = {s: [load(workload, s, r) for r in range(1, repeats + 1)] for s in settings}
    ref = runs["default"][0]["text"]
    same = all(x["text"] == ref for s in settings for x in runs[s])
    print(f"#### {workload}: {runs['default'][0]['prompt']} prompt tokens" + ("" if same else " (TEXT DIFFERS)"))
    print()
    print("| setting | decode tok/s | vs default (per round) | prefill s | hit rate | moved MiB | moving ms | waiting ms | prefetched |")
    print("|---|---|---|---|---|---|---|---|---|")
    med = lambda s, k: statistics.median(x[k] for x in runs[s])
    for s in settings:
        ratios = " / ".join("%.2f" % (runs[s][r]["decode"] / runs["default"][r]["decode"]) for r in range(repeats))
        print(f"| {s} | {med(s, 'decode'):.1f} | {ratios} | {med(s, 'prefill_s'):.2f} | {100 * med(s, 'hit'):.1f}% | "
              f"{med(s, 'moved'):.0f} | {med(s, 'move_ms'):.0f} | {med(s, 'wait'):.0f} | {med(s, 'prefetch'):.0f} |")
    print()
    print("Decisions of the adaptive mode (round 1):")
    for d in runs["adapt"][0]["decisions"]:
        print(f"- ubatch {d['ubatch']}: {d['what']} ({d['why']})")
    print()
EOF
