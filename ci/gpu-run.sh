#!/usr/bin/env bash
# Runs a bundle made by ci/gpu-bundle.sh on a GPU machine, from a checkout of the same commit.
# Usage: ci/gpu-run.sh [BUNDLE_DIR] [OUT_DIR] [nextest args...]
# Writes to OUT_DIR: environment.txt, peerpool.txt, nextest.log, junit.xml, and the fixtures'
# merged run report (report.json, report.md).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu}
out=${2:-gpu-out}
shift 2 || true
mkdir -p "$out"
export PEERPOOL_COMMIT=$(head -n 1 "$bundle/COMMIT" 2>/dev/null)
export PEERPOOL_REPORT_DIR=$(mktemp -d "${TMPDIR:-/tmp}/peerpool-report.XXXXXX")
{
    echo "commit: $(cat "$bundle/COMMIT" 2>/dev/null | tr '\n' ' ')"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1
    nvidia-smi topo -m 2>&1
} > "$out/environment.txt"
"$bundle/peerpool" > "$out/peerpool.txt" 2>&1
echo "peerpool exit: $?" >> "$out/peerpool.txt"
"$bundle/cargo-nextest" nextest run --archive-file "$bundle/tests.tar.zst" --workspace-remap . \
    --profile gpu "$@" 2>&1 | tee "$out/nextest.log"
status=${PIPESTATUS[0]}
junit=$(find . /tmp -path "*nextest/gpu/junit.xml" 2>/dev/null | head -n 1)
[ -n "$junit" ] && cp "$junit" "$out/junit.xml"
"$bundle/peerpool" report "$PEERPOOL_REPORT_DIR" --json "$out/report.json" --markdown "$out/report.md" | tee -a "$out/nextest.log"
echo "nextest exit: $status" | tee -a "$out/nextest.log"
exit "$status"
