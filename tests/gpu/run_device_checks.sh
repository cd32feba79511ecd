#!/usr/bin/env bash
# The CUDA backend's checks on a machine with an NVIDIA GPU, in well under 8 minutes:
# builds what they need (for this GPU's architecture only), runs the tests labelled gpu
# (and the unit tests of the backend choice and of the kernels' host emulation), then the
# benchmark, and writes everything under the folder given as argument:
#   OUT/build.log   OUT/tests.log   OUT/bench.log   OUT/bench.json   OUT/info.txt   OUT/summary.txt
#
#   tests/gpu/run_device_checks.sh OUT_DIR [BENCH_LAYERS]
#
# BENCH_LAYERS (default 32): layers of the random-weight Llama-3-8B-shaped Q4_K model the
# benchmark writes and runs; fewer take less time to write (the bandwidth ratio is per
# token and hardly changes). Environment: LONGREAD_SHARED_DIR (reference models and
# outputs, default ../shared), BUILD_DIR (default build-gpu), JOBS (default: all cores),
# CUDA_ARCHS (default: native when nvidia-smi sees a GPU, else the project's default list).
set -u
out=${1:?usage: run_device_checks.sh OUT_DIR [BENCH_LAYERS]}
layers=${2:-32}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
jobs=${JOBS:-$(nproc)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start )) s"; }

note "run_device_checks: $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > "$out/nvidia-smi.csv" 2>&1 || true
note "GPU: $(tail -n +2 "$out/nvidia-smi.csv" 2>/dev/null | head -1)"

# Build: only this GPU's architecture, only the targets the checks run.
extra=()
[ -n "${LONGREAD_SHARED_DIR:-}" ] && extra+=(-DLONGREAD_SHARED_DIR="$LONGREAD_SHARED_DIR")
archs=${CUDA_ARCHS:-}
if [ -z "$archs" ] && nvidia-smi -L > /dev/null 2>&1; then archs=native; fi
[ -n "$archs" ] && extra+=(-DCMAKE_CUDA_ARCHITECTURES="$archs")
if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLONGREAD_BUILD_GUI=OFF -DLONGREAD_CUDA=ON \
      "${extra[@]}" > "$out/build.log" 2>&1 ||
   ! cmake --build "$build" -j "$jobs" --target test_cuda_ops test_cuda_model test_cuda_host_codecs test_backend_factory \
      bench_cuda longread-cli >> "$out/build.log" 2>&1; then
    note "BUILD FAILED after $(elapsed): see build.log"
    tail -30 "$out/build.log"
    exit 1
fi
note "built in $(elapsed)"
"$build/app/cli/longread-cli" info --backend cuda > "$out/info.txt" 2>&1 || true

# Tests: the gpu label, and the two unit tests that belong to the backend.
status=0
( cd "$build" && timeout 300 ctest -L gpu -R "test_cuda_ops|test_cuda_model" --output-on-failure &&
  timeout 120 ctest -R "test_cuda_host_codecs|test_backend_factory" --output-on-failure ) > "$out/tests.log" 2>&1 || status=1
grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/tests.log" | tee -a "$summary"
if grep -q "Skipped" "$out/tests.log"; then
    note "NO DEVICE: the gpu tests skipped (no CUDA device usable here)"
    status=2
fi
# Per-op and per-model figures the tests print (max |d| against the references).
grep -E "QINFO|FAIL" "$out/tests.log" > "$out/test-figures.txt" 2>/dev/null || true
note "tests done after $(elapsed) (status $status)"

# Benchmark.
if timeout 330 "$build/tests/gpu/bench_cuda" "$out" --layers "$layers" > "$out/bench.log" 2>&1; then
    cat "$out/bench.log" | tee -a "$summary"
else
    note "BENCHMARK FAILED or timed out: see bench.log"
    tail -20 "$out/bench.log"
    status=1
fi
note "finished after $(elapsed) with status $status"
exit $status
