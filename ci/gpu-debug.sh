#!/usr/bin/env bash
# Backtrace of one test that crashed on a GPU machine: extracts the archive's test binaries
# and runs the test under cuda-gdb (which the CUDA image carries).
# Usage: ci/gpu-debug.sh BUNDLE_DIR BINARY_NAME TEST_NAME [OUT_FILE]
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=$1; binary=$2; test=$3; out=${4:-/dev/stdout}
# nextest extracts only into a folder that exists.
rm -rf /tmp/peerpool-extract && mkdir -p /tmp/peerpool-extract
"$bundle/cargo-nextest" nextest list --archive-file "$bundle/tests.tar.zst" --workspace-remap . \
    --extract-to /tmp/peerpool-extract --extract-overwrite > /dev/null 2>&1
exe=$(ls /tmp/peerpool-extract/target/release/deps/"$binary"-* 2>/dev/null | grep -v '\.d$' | head -n 1)
[ -n "$exe" ] || { echo "no test binary named $binary" > "$out"; exit 1; }
timeout 300 cuda-gdb -batch -ex run -ex bt -ex 'info threads' --args "$exe" --exact "$test" --nocapture > "$out" 2>&1
