#!/usr/bin/env bash
# What the four- and eight-GPU issues ask of real machines, on the simulated ones this project's
# CPUs can run (while nvidia-h200-x4 and -x8 are not lent): for each topology, `peerpool check`
# (its matrix, the time it took and the wall time the H200-calibrated timing model projects),
# then the per-pair suites, the property sequences on the real-driver path and IPC between two
# processes, through the libcuda shim, each suite in rounds with its projected wall time.
# Usage: ci/many-gpus.sh OUT_DIR [TOPOLOGY ...]
#        (default: four_gpu_islands gb200_nvl72_tray eight_gpu_nvswitch sixteen_gpu_nvswitch)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: ci/many-gpus.sh OUT_DIR [TOPOLOGY ...]}
shift
topologies=("$@")
if [ ${#topologies[@]} -eq 0 ]; then
    topologies=(four_gpu_islands gb200_nvl72_tray eight_gpu_nvswitch sixteen_gpu_nvswitch)
fi
mkdir -p "$out"
cargo build -q --release -p peerpool-cli || exit 1
cargo build -q -p peerpool-shim -p peerpool-cli || exit 1
failed=0
{
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) CPUs, no GPU"
} > "$out/summary.txt"
for t in "${topologies[@]}"; do
    echo "== $t" | tee -a "$out/summary.txt"
    target/release/peerpool check --quiet --topology "$t" --out "$out/$t-check" > "$out/$t-check.txt" 2>&1
    status=$?
    {
        echo "peerpool check exit: $status"
        sed -n '/GPU0/,/^$/p' "$out/$t-check.txt"
        grep -E "took|projected" "$out/$t-check.txt"
    } | tee -a "$out/summary.txt"
    [ "$status" = 0 ] || failed=1
    # 16 test threads, as libtest picks on a 16-core GPU machine (its default is the core count,
    # 2 here): the projection follows the threads that ran the trials.
    target/debug/peerpool sim --topology "$t" -- \
        cargo test -q -p peerpool-tests --test first_proof --test grant --test model_hw --test ipc \
        -- --test-threads 16 > "$out/$t-suites.txt" 2>&1
    status=$?
    {
        echo "suites through the shim exit: $status"
        grep -E "^test result|projected on the simulated machine" "$out/$t-suites.txt"
    } | tee -a "$out/summary.txt"
    [ "$status" = 0 ] || failed=1
    # The benchmark for many GPUs (its numbers are the timing model's projection): every
    # ordered pair measured or skipped with its reason, full curves for the first four.
    target/debug/peerpool sim --topology "$t" -- target/release/peerpool bench --repeats 1 \
        --max-bytes 1048576 --live-gib 0,1 --curve-pairs 4 --out "$out/$t-bench" > "$out/$t-bench.txt" 2>&1
    status=$?
    python3 - "$out/$t-bench/bench.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
r = json.load(open(sys.argv[1]))
n = 1 + max(max(p["owner"], p["accessor"]) for p in r["pairs"] + r["skipped"])
full = sum(len(p["sizes"]) == len(r["sizes"]) for p in r["pairs"])
print(f"bench: {len(r['pairs'])} ordered pairs measured ({full} with full curves), "
      f"{len(r['skipped'])} skipped, of {n * (n - 1)}; grant curve on gpu{r['grant_pair'][0]} -> gpu{r['grant_pair'][1]}")
first = r["pairs"][0]
rate = {c["path"].split(" (")[0]: c["gbps"][-1] for c in first["curves"]}
print(f"bench projection, gpu{first['owner']} -> gpu{first['accessor']} at {first['sizes'][-1]} bytes: "
      f"copy engine {rate['copy engine owner->accessor']:.0f} GB/s, kernel read {rate['kernel read']:.0f} GB/s, "
      f"both directions (copy engine) {rate['copy engine both directions at once']:.0f} GB/s; "
      f"grant {r['grant_vs_live'][0]['grant_us']:.0f} us on an empty pool")
PY
    [ "$status" = 0 ] || failed=1
    rm -rf "$out/$t-check" "$out/$t-bench"
done
exit "$failed"
