#!/usr/bin/env bash
# The timing model's projection of `peerpool check` and of the first_proof and grant suites on
# the simulated machine of the run's size (two GPUs: two_h200_nvlink, the lent 2 x H200; one:
# one_gpu, where `peerpool check` has nothing to check and only the suites are compared), with a
# calibration run's timing.json, beside that run's measured wall times (measured.json, from
# ci/gpu-calibrate.sh): within 25% passes.
# Usage: ci/calibration-compare.sh RUN_DIR [BIN_DIR]
#   RUN_DIR: timing.json and measured.json (e.g. docs/hardware/<date>-calibration)
#   BIN_DIR: peerpool, libpeerpool_shim.so and suites/{first_proof,grant} (a GPU bundle); by
#            default they are built here (release) and taken from target/.
# PEERPOOL_COMPARE_TIMING=FILE compares FILE's model instead of the run's timing.json (.ci/run:
# the committed host/sim/timing/h200.json, what users get, against the latest measurements).
# Writes the comparison as JSON to $PEERPOOL_PROJECTION_OUT when set (ci/gpu-calibrate.sh sets
# RUN_DIR/projection.json); exits 1 when a projection is off by more than 25%.
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: ci/calibration-compare.sh RUN_DIR [BIN_DIR]}
run=$(cd "$run" && pwd)
timing=$(realpath "${PEERPOOL_COMPARE_TIMING:-$run/timing.json}")
bin=${2:-}
if [ -z "$bin" ]; then
    cargo build --release -q -p peerpool-cli -p peerpool-shim
    bin=target/calibration-bin
    mkdir -p "$bin/suites"
    cp target/release/peerpool target/release/libpeerpool_shim.so "$bin/"
    cargo test --release -q -p peerpool-tests --test first_proof --test grant --no-run --message-format=json 2>/dev/null |
        ci/suite_binaries.py "$bin/suites"
fi
bin=$(cd "$bin" && pwd)
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], sys.argv[3]))' "$run/measured.json" "$@"; }
threads=$(field test_threads 16)
gpus=$(field gpus 2)
case "$gpus" in
    1) topology=one_gpu ;;
    2) topology=two_h200_nvlink ;;
    *) echo "calibration-compare: $run/measured.json is from $gpus GPUs; the catalog's machines for a calibration are 1 and 2" >&2; exit 1 ;;
esac
scratch=$(mktemp -d "${TMPDIR:-/tmp}/peerpool-projection.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
projected() { sed -n 's/.*projected on the simulated machine.*: \([0-9.]*\) s$/\1/p' "$1" | tail -n 1; }
check=
if [ "$gpus" -ge 2 ]; then
    "$bin/peerpool" check --quiet --topology "$topology" --timing "$timing" --out "$scratch/check" > "$scratch/check.txt"
    check=$(projected "$scratch/check.txt")
fi
suite() {
    PEERPOOL_REPORT_DIR="$scratch/report-$1" "$bin/peerpool" sim --shim "$bin/libpeerpool_shim.so" \
        --topology "$topology" --timing "$timing" -- "$bin/suites/$1" --test-threads "$threads" > "$scratch/$1.txt" 2>&1
    projected "$scratch/$1.txt"
}
first_proof=$(suite first_proof)
grant=$(suite grant)
python3 - "$run" "$topology" "$timing" "$check" "$first_proof" "$grant" <<'PY'
import json, os, statistics, sys
run, topology, timing = sys.argv[1], sys.argv[2], sys.argv[3]
projections = dict(zip(["check", "first_proof", "grant"], sys.argv[4:]))
measured = json.load(open(os.path.join(run, "measured.json")))
if measured.get("gpus", 2) < 2:
    del projections["check"]  # one GPU: nothing to check (exit 3 on both machines)
measured = measured["runs"]
rows, ok = [], True
print(f"projected on the simulated {topology} with {os.path.relpath(timing)}")
for name, value in projections.items():
    seconds = [r["seconds"] for r in measured if r["run"].rsplit("_", 1)[0] == name and r["exit"] == 0]
    if not seconds or not value:
        rows.append({"run": name, "measured_s": seconds, "projected_s": value or None, "within_25_percent": False})
        ok = False
        continue
    m, p = statistics.median(seconds), float(value)
    within = abs(p - m) <= 0.25 * m
    ok &= within
    rows.append({"run": name, "measured_s": seconds, "measured_median_s": m, "projected_s": p,
                 "projected_over_measured": round(p / m, 3), "within_25_percent": within})
    print(f"{name:12} measured {m:7.3f} s (median of {len(seconds)})   projected {p:7.3f} s   ratio {p / m:5.2f}   {'ok' if within else 'OFF BY MORE THAN 25%'}")
target = os.environ.get("PEERPOOL_PROJECTION_OUT")
if target:
    with open(target, "w") as f:
        json.dump({"model": os.path.relpath(timing, run), "topology": topology, "rows": rows}, f, indent=2)
sys.exit(0 if ok else 1)
PY
