#!/usr/bin/env bash
# Builds the suites with peerpool's own kernels run from their PTX on the simulator (peerpool-sim's
# `ptx-kernels` feature), as a bundle for a machine with many cores: the nextest archive, the
# shim and command built the same way, and cargo-nextest.
# Usage: ci/ptx-kernels-bundle.sh [BUNDLE_DIR]   (default .gpu/ptxk; keep it git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu/ptxk}
mkdir -p "$bundle"
# A target directory of its own: the feature changes the simulator every test links.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/ptxk}
features=(--features peerpool-sim/ptx-kernels)
cargo build --release -q -p peerpool-shim "${features[@]}"
cargo build --release -q -p peerpool-cli "${features[@]}"
cargo nextest archive --release --workspace "${features[@]}" --zstd-level 19 --archive-file "$bundle/tests.tar.zst"
cp "$(command -v cargo-nextest)" "$bundle/cargo-nextest"
strip "$bundle/cargo-nextest" 2>/dev/null || true
cp "$CARGO_TARGET_DIR/release/libpeerpool_shim.so" "$CARGO_TARGET_DIR/release/peerpool" "$bundle/"
cp ci/ptx-kernels-run.sh "$bundle/run.sh"
git rev-parse HEAD > "$bundle/COMMIT"
git status --porcelain | grep -q . && echo "dirty" >> "$bundle/COMMIT" || true
du -sh "$bundle"/* | sed 's/^/bundle: /'
