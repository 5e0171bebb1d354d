#!/usr/bin/env bash
# Runs peerpool's benchmarks on a GPU machine from a bundle made by ci/gpu-bundle.sh:
# `peerpool bench` (bandwidth, latency, atomics, grant cost; plots if matplotlib is there),
# the grant overhead benchmark and the IPC cost benchmark.
# Usage: ci/gpu-bench.sh [BUNDLE_DIR] [OUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu}
out=${2:-gpu-out}
mkdir -p "$out/bench"
status=0
"$bundle/peerpool" bench --out "$out/bench" > "$out/bench/bench.txt" 2>&1 || status=1
python3 ci/plot_bench.py "$out/bench/bench.json" "$out/bench" >> "$out/bench/bench.txt" 2>&1 || echo "no plots" >> "$out/bench/bench.txt"
"$bundle/grant_bench" 200 > "$out/bench/grant_bench.json" 2> "$out/bench/grant_bench.err" || status=1
if [ -x "$bundle/ipc_bench" ]; then
    "$bundle/ipc_bench" > "$out/bench/ipc_bench.json" 2> "$out/bench/ipc_bench.err" || status=1
fi
exit "$status"
