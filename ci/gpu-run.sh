#!/usr/bin/env bash
# Runs a bundle made by ci/gpu-bundle.sh on a GPU machine, from a checkout of the same commit.
# Usage: ci/gpu-run.sh [BUNDLE_DIR] [OUT_DIR] [nextest args...]
# Writes to OUT_DIR: environment.txt, peerpool.txt, trials.txt (every trial of the archive,
# `binary-id name`, the same names on every machine), nextest.log, junit.xml (nextest's: ignored
# trials left out), and the fixtures' merged run report (report.json, report.md and
# report-junit.xml, every skipped trial with its reason). Set PEERPOOL_REQUIRE_GPUS=N where the
# GPUs must be there: then no GPU fails the run (the suites refuse to list themselves) instead
# of skipping every trial. Every trial the build machine listed (the bundle's trials-built.txt)
# must be listed here under the same name: trials-missing.txt names any that is not, and fails
# the run.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu}
out=${2:-gpu-out}
shift 2 || true
mkdir -p "$out"
export PEERPOOL_COMMIT=$(head -n 1 "$bundle/COMMIT" 2>/dev/null)
export PEERPOOL_REPORT_DIR=$(mktemp -d "${TMPDIR:-/tmp}/peerpool-report.XXXXXX")
# The archive carries no cdylib: the shim's own tests take the bundle's.
if [ -f "$bundle/libpeerpool_shim.so" ]; then
    export PEERPOOL_SHIM=$(realpath "$bundle/libpeerpool_shim.so")
fi
{
    echo "commit: $(cat "$bundle/COMMIT" 2>/dev/null | tr '\n' ' ')"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm)"
    echo "checkout: $PWD"
    echo "built at: $(cat "$bundle/BUILD_ROOT" 2>/dev/null || echo unknown)"
    echo "PEERPOOL_REQUIRE_GPUS: ${PEERPOOL_REQUIRE_GPUS:-unset}"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1
    nvidia-smi topo -m 2>&1
} > "$out/environment.txt"
"$bundle/peerpool" > "$out/peerpool.txt" 2>&1
echo "peerpool exit: $?" >> "$out/peerpool.txt"
"$bundle/cargo-nextest" nextest list --archive-file "$bundle/tests.tar.zst" --workspace-remap . \
    --run-ignored all -T oneline > "$out/trials.txt" 2> "$out/trials.err"
"$bundle/cargo-nextest" nextest run --archive-file "$bundle/tests.tar.zst" --workspace-remap . \
    --profile gpu "$@" 2>&1 | tee "$out/nextest.log"
status=${PIPESTATUS[0]}
if [ -f "$bundle/trials-built.txt" ]; then
    comm -23 <(sort "$bundle/trials-built.txt") <(sort "$out/trials.txt") > "$out/trials-missing.txt"
    if [ -s "$out/trials-missing.txt" ]; then
        echo "$(wc -l < "$out/trials-missing.txt") trial(s) of the build machine are not listed here by the same name" | tee -a "$out/nextest.log"
        [ "$status" = 0 ] && status=1
    else
        echo "every trial of the build machine ($(wc -l < "$bundle/trials-built.txt")) is listed here by the same name" | tee -a "$out/nextest.log"
    fi
fi
junit=$(find . /tmp -path "*nextest/gpu/junit.xml" 2>/dev/null | head -n 1)
[ -n "$junit" ] && cp "$junit" "$out/junit.xml"
"$bundle/peerpool" report "$PEERPOOL_REPORT_DIR" --json "$out/report.json" --markdown "$out/report.md" \
    --junit "$out/report-junit.xml" | tee -a "$out/nextest.log"
echo "nextest exit: $status" | tee -a "$out/nextest.log"
exit "$status"
