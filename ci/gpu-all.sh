#!/usr/bin/env bash
# Everything peerpool runs on a GPU machine, from a bundle made by ci/gpu-bundle.sh: the test
# suites with their report (ci/gpu-run.sh), the main job (`peerpool check`), the benchmarks
# (ci/gpu-bench.sh) and the driver probe; then one archive of it all, and a summary.
# Usage: ci/gpu-all.sh [BUNDLE_DIR] [OUT_DIR] [ARCHIVE]
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu}
out=${2:-gpu-out}
archive=${3:-$out.tar.gz}
mkdir -p "$out"
ci/gpu-run.sh "$bundle" "$out" > "$out/gpu-run.log" 2>&1
tests=$?
mkdir -p "$out/check"
"$bundle/peerpool" check --quiet --out "$out/check" > "$out/check/check.txt" 2>&1
check=$?
ci/gpu-bench.sh "$bundle" "$out"
bench=$?
"$bundle/driver_probe" > "$out/driver_probe.txt" 2>&1
for section in destroy-live fabric-noexport fabric; do
    "$bundle/driver_probe" "$section" > "$out/driver_probe_$section.txt" 2>&1
    echo "exit: $?" >> "$out/driver_probe_$section.txt"
done
{
    echo "commit: $(head -n 1 "$bundle/COMMIT")"
    echo "tests exit: $tests"
    echo "peerpool check exit: $check"
    echo "benchmarks exit: $bench"
    grep -E "Summary|passed|failed" "$out/nextest.log" | tail -n 3
    grep -E "passed, .* failed" "$out/report.md" | head -n 1
    sed -n '1,12p' "$out/check/check.txt"
    cat "$out/bench/bench.txt"
} > "$out/summary.txt"
tar czf "$archive" -C "$(dirname "$out")" "$(basename "$out")"
cat "$out/summary.txt"
