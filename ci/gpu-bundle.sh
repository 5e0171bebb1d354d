#!/usr/bin/env bash
# Builds everything a GPU machine needs to run peerpool's suites without cargo:
# the nextest archive of every test binary, the cargo-nextest binary, and the release tools.
# Usage: ci/gpu-bundle.sh [BUNDLE_DIR]   (default .gpu; keep it git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu}
mkdir -p "$bundle"
cargo build --release --workspace --bins --examples
cargo build --release -p peerpool-shim   # libpeerpool_shim.so, beside `peerpool` in the bundle
cargo nextest archive --release --workspace --zstd-level 19 --archive-file "$bundle/tests.tar.zst"
# The first_proof and grant suites as plain binaries: ci/gpu-calibrate.sh times each as one process.
mkdir -p "$bundle/suites"
cargo test --release -q -p peerpool-tests --test first_proof --test grant --no-run --message-format=json 2>/dev/null |
    ci/suite_binaries.py "$bundle/suites"
cp "$(command -v cargo-nextest)" "$bundle/cargo-nextest"
# Every trial's name as this machine lists it (without GPUs, unless it has some): a GPU run must
# list each of them under the same name (ci/gpu-run.sh checks).
env -u PEERPOOL_TOPOLOGY -u PEERPOOL_HARDWARE -u PEERPOOL_SIM_TOPOLOGY -u PEERPOOL_REQUIRE_GPUS "$bundle/cargo-nextest" nextest list \
    --archive-file "$bundle/tests.tar.zst" --workspace-remap . --run-ignored all -T oneline \
    > "$bundle/trials-built.txt"
# The whole tree that travels to a GPU machine is limited to 64 MiB: strip what can be.
strip "$bundle/cargo-nextest" "$bundle"/suites/* 2>/dev/null || true
cp target/release/libpeerpool_shim.so "$bundle/"
for bin in target/release/peerpool target/release/examples/*; do
    [ -f "$bin" ] && [ -x "$bin" ] && case "$bin" in *.d|*-*) ;; *) cp "$bin" "$bundle/" ;; esac
done
git rev-parse HEAD > "$bundle/COMMIT" 2>/dev/null || echo unknown > "$bundle/COMMIT"
pwd > "$bundle/BUILD_ROOT"   # where the archive was built: ci/gpu-elsewhere.sh runs it from another path
git status --porcelain | grep -q . && echo "dirty" >> "$bundle/COMMIT" || true
du -sh "$bundle"/* | sed 's/^/bundle: /'
