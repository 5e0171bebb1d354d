#!/usr/bin/env bash
# Builds everything a GPU machine needs to run peerpool's suites without cargo:
# the nextest archive of every test binary, the cargo-nextest binary, and the release tools.
# Usage: ci/gpu-bundle.sh [BUNDLE_DIR]   (default .gpu; keep it git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu}
mkdir -p "$bundle"
cargo build --release --workspace --bins --examples
cargo nextest archive --release --workspace --archive-file "$bundle/tests.tar.zst"
cp "$(command -v cargo-nextest)" "$bundle/cargo-nextest"
for bin in target/release/peerpool target/release/examples/*; do
    [ -f "$bin" ] && [ -x "$bin" ] && case "$bin" in *.d|*-*) ;; *) cp "$bin" "$bundle/" ;; esac
done
git rev-parse HEAD > "$bundle/COMMIT" 2>/dev/null || echo unknown > "$bundle/COMMIT"
git status --porcelain | grep -q . && echo "dirty" >> "$bundle/COMMIT" || true
du -sh "$bundle"/* | sed 's/^/bundle: /'
