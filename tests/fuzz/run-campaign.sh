#!/usr/bin/env bash
# A long fuzzing campaign: each libFuzzer target of the fuzz build (cmake --preset fuzz &&
# cmake --build --preset fuzz) runs alone for its share of the time over a corpus of its
# own, started from its seeds and the corpus of the short runs; prints per target the
# executions, the crashes, the corpus libFuzzer kept (inputs/bytes) and the coverage
# reached (cov: edges, ft: features), as docs/BENCHMARKS.md reports.
#   tests/fuzz/run-campaign.sh SECONDS [TARGET...]   (default: every target)
# Crashes are written under build-fuzz/campaign/<target>/crashes/.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:?usage: tests/fuzz/run-campaign.sh SECONDS [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf tokenizer chat_template server_request settings_json document_loader)

build=build-fuzz
for name in "${targets[@]}"; do
  binary=$build/tests/fuzz/fuzz_$name
  [ -x "$binary" ] || { echo "run-campaign.sh: $binary not built (cmake --build --preset fuzz)" >&2; exit 2; }
  # The flags ctest gives the target (-max_len, -dict, ...), without its time and folders.
  flags=$(ctest --test-dir $build -R "^fuzz_$name\$" --show-only=json-v1 |
    python3 -c 'import json,sys; c=json.load(sys.stdin)["tests"][0]["command"][1:]; print(" ".join(a for a in c if a.startswith("-") and not a.startswith("-max_total_time")))')
  seeds=$(ctest --test-dir $build -R "^fuzz_$name\$" --show-only=json-v1 |
    python3 -c 'import json,sys; c=json.load(sys.stdin)["tests"][0]["command"][1:]; print(" ".join(a for a in c if not a.startswith("-")))')
  dir=$build/campaign/$name
  mkdir -p "$dir/corpus" "$dir/crashes"
  # shellcheck disable=SC2086 # flags and seed folders are lists
  "$binary" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/crashes/" $flags \
    "$dir/corpus" $seeds >"$dir/log" 2>&1 || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  last=$(grep -E '^#[0-9]+' "$dir/log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
  crashes=$(find "$dir/crashes" -type f | wc -l)
  echo "fuzz_$name: ${seconds} s, ${execs:-?} executions, $crashes crashes, corpus $corpus (inputs/bytes), cov $cov, ft $ft"
done
