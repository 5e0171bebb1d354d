#!/usr/bin/env bash
# The timing model's projection of `peerpool check` and of the first_proof and grant suites on
# the simulated 2 x H200 (two_h200_nvlink), with a calibration run's timing.json, beside that
# run's measured wall times (measured.json, from ci/gpu-calibrate.sh): within 25% passes.
# Usage: ci/calibration-compare.sh RUN_DIR [BIN_DIR]
#   RUN_DIR: timing.json and measured.json (e.g. docs/hardware/<date>-calibration)
#   BIN_DIR: peerpool, libpeerpool_shim.so and suites/{first_proof,grant} (a GPU bundle); by
#            default they are built here (release) and taken from target/.
# Writes the comparison as JSON to $PEERPOOL_PROJECTION_OUT when set (ci/gpu-calibrate.sh sets
# RUN_DIR/projection.json); exits 1 when a projection is off by more than 25%.
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: ci/calibration-compare.sh RUN_DIR [BIN_DIR]}
run=$(cd "$run" && pwd)
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
threads=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("test_threads", 16))' "$run/measured.json")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/peerpool-projection.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
projected() { sed -n 's/.*projected on the simulated machine.*: \([0-9.]*\) s$/\1/p' "$1" | tail -n 1; }
"$bin/peerpool" check --quiet --topology two_h200_nvlink --timing "$run/timing.json" --out "$scratch/check" > "$scratch/check.txt"
check=$(projected "$scratch/check.txt")
suite() {
    PEERPOOL_REPORT_DIR="$scratch/report-$1" "$bin/peerpool" sim --shim "$bin/libpeerpool_shim.so" \
        --topology two_h200_nvlink --timing "$run/timing.json" -- "$bin/suites/$1" --test-threads "$threads" > "$scratch/$1.txt" 2>&1
    projected "$scratch/$1.txt"
}
first_proof=$(suite first_proof)
grant=$(suite grant)
python3 - "$run" "$check" "$first_proof" "$grant" <<'PY'
import json, os, statistics, sys
run, projections = sys.argv[1], dict(zip(["check", "first_proof", "grant"], sys.argv[2:]))
measured = json.load(open(os.path.join(run, "measured.json")))["runs"]
rows, ok = [], True
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
        json.dump({"model": "timing.json", "rows": rows}, f, indent=2)
sys.exit(0 if ok else 1)
PY
