#!/usr/bin/env bash
# The CPU half of the CI matrix, for one simulated topology of host/sim/topologies/ (or all):
# `peerpool check` on it (a topology whose link corrupts bytes must fail, one GPU checks
# nothing), then the model property suite's trial for it.
# Usage: ci/sim-matrix.sh [TOPOLOGY ...]   (default: every catalog topology)
set -euo pipefail
cd "$(dirname "$0")/.."
topologies=("$@")
if [ ${#topologies[@]} -eq 0 ]; then
    mapfile -t topologies < <(ls host/sim/topologies | sed 's/\.toml$//')
fi
cargo build --release -q -p peerpool-cli
for t in "${topologies[@]}"; do
    echo "== $t"
    # Exit codes as `peerpool --help` lists them: 1 a failure found, 3 nothing checked.
    expect=0
    case "$t" in corrupt_link_pair) expect=1 ;; one_gpu) expect=3 ;; esac
    set +e
    target/release/peerpool check --quiet --topology "$t" --out "target/sim-matrix/$t" > "target/sim-matrix-$t.txt" 2>&1
    status=$?
    set -e
    sed -n '1p;/GPU0/,/^$/p' "target/sim-matrix-$t.txt"
    if [ "$status" != "$expect" ]; then
        echo "peerpool check exited $status on $t, expected $expect:" >&2
        cat "target/sim-matrix-$t.txt" >&2
        exit 1
    fi
    cargo test -q --release -p peerpool-tests --test model_sim -- --exact "model::sim::$t"
done
