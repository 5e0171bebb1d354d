#!/usr/bin/env bash
# `peerpool check`'s time on a GPU machine, in one call: the wall time of `peerpool check` (every
# pair's fault proven, its probes pipelined; each run's output keeps the floor line: the
# measured time over the floor of the H200 calibration) and of the
# first_proof and grant suites (each suite one process, libtest's threads, as `cargo test`
# runs it), three times each; the grant benchmark (the first grant of a new ordered pair beside
# the old verification, in the same run) and the cold start's driver-call stopwatch; the timing
# model's calibration (`peerpool calibrate`: timing.json and calibration.json); then the model's
# projection of the same three runs on the simulated machine, with that calibration, beside
# the measurements (ci/calibration-compare.sh; within 25% passes).
# Usage: ci/gpu-calibrate.sh BUNDLE_DIR OUT_DIR     (a bundle from ci/gpu-bundle.sh, same commit)
# Commit OUT_DIR as docs/hardware/<date>-calibration/ (everything in it is small text).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:?usage: ci/gpu-calibrate.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: ci/gpu-calibrate.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out/runs"
bundle=$(cd "$bundle" && pwd)
export PEERPOOL_COMMIT=$(head -n 1 "$bundle/COMMIT" 2>/dev/null)
export PEERPOOL_CALIBRATION_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
threads=${PEERPOOL_TEST_THREADS:-16}
# The GPUs CUDA sees: the comparison projects the same runs on the catalog's machine of that size.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
{
    echo "commit: $(tr '\n' ' ' < "$bundle/COMMIT" 2>/dev/null)"
    echo "date: $PEERPOOL_CALIBRATION_DATE"
    echo "host: $(uname -srm), $(nproc) CPUs"
    echo "test threads: $threads"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1
    nvidia-smi topo -m 2>&1
} > "$out/environment.txt"

# Seconds a command took from the shell's spawn to its exit; its output to runs/NAME.txt.
measured=()
timed() {
    local name=$1
    shift
    local start end status
    start=$(date +%s%N)
    "$@" > "$out/runs/$name.txt" 2>&1
    status=$?
    end=$(date +%s%N)
    local seconds
    seconds=$(awk "BEGIN { printf \"%.4f\", ($end - $start) / 1e9 }")
    echo "$name: $seconds s (exit $status)"
    measured+=("{\"run\": \"$name\", \"seconds\": $seconds, \"exit\": $status}")
}

reports=$(mktemp -d "${TMPDIR:-/tmp}/peerpool-report.XXXXXX")
export PEERPOOL_REPORT_DIR=$reports
# A fresh machine first: the grant benchmark's cold figures.
"$bundle/grant_bench" 200 > "$out/grant_bench_1.json" 2> "$out/grant_bench_1.err"
"$bundle/cold_start" sequential > "$out/cold_start.jsonl" 2>&1
"$bundle/peerpool" calibrate --out "$out" > "$out/calibrate.txt" 2>&1 || echo "calibrate failed: $out/calibrate.txt"
for i in 1 2 3; do
    timed "check_$i" "$bundle/peerpool" check --quiet --out "$out/runs/check_$i"
    timed "first_proof_$i" "$bundle/suites/first_proof" --test-threads "$threads"
    timed "grant_$i" "$bundle/suites/grant" --test-threads "$threads"
done
"$bundle/grant_bench" 200 > "$out/grant_bench_2.json" 2> "$out/grant_bench_2.err"
"$bundle/cold_start" sequential >> "$out/cold_start.jsonl" 2>&1
rm -rf "$reports"
(IFS=,; echo "{\"gpus\": $gpus, \"test_threads\": $threads, \"runs\": [${measured[*]}]}") > "$out/measured.json"

# The model's projection of the same runs, with this machine's calibration, and the verdict.
PEERPOOL_PROJECTION_OUT="$out/projection.json" ci/calibration-compare.sh "$out" "$bundle" | tee "$out/comparison.txt"
status=${PIPESTATUS[0]}
# The measured checks against their floor (the committed calibration's), as each run printed it.
for i in 1 2 3; do
    sed -n "s/^floor: /check_$i floor: /p" "$out/runs/check_$i.txt" | tee -a "$out/comparison.txt"
done
# What this calibration projects for the larger catalog nodes, and their floors (the goal: at
# most 1.15x with every pair's fault proven), cuInit's growth with the visible GPUs included
# when this machine showed one.
for t in eight_gpu_nvswitch sixteen_gpu_nvswitch; do
    "$bundle/peerpool" check --quiet --topology "$t" --timing "$out/timing.json" --out "$out/runs/projected-$t" 2>&1 |
        sed -n -e "s/^timing: .*: \([0-9.]* s\)$/projected check on $t with this calibration: \1/p" \
            -e "s/^floor: /floor of $t with this calibration: /p" | tee -a "$out/comparison.txt"
done
grep -hE '"(cold_first_grant_contexts_ready|first_grant_new_pair_devices_ready|first_grant_after_prepare|prepare_verification_two_devices|verify_pair_0_to_1|verify_pair_with_fresh_probe_pools_as_before)"' \
    "$out"/grant_bench_*.json | sed 's/^/grant bench: /' | tee -a "$out/comparison.txt"
exit "$status"
