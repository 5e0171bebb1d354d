#!/usr/bin/env bash
# The shim's memory over long runs: host/shim/tests/clients/soak.c through `peerpool sim` on one
# simulated GPU, a million allocate/copy/free cycles (cuMemAlloc, and a pool's stream-ordered
# allocations) and a hundred thousand pool and context create/destroy cycles, each printing how
# much resident memory grew after its warm-up; then ten million allocate/free cycles across the
# pools and streams of eight simulated GPUs. Needs NVIDIA's cuda.h (ci/cuda-wheels.sh).
# Usage: ci/soak.sh [OUT_FILE]   (default target/soak.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/soak.txt}
cuda=$(ci/cuda-wheels.sh)
cargo build --release -q -p peerpool-shim -p peerpool-cli
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$PWD/target/release/libpeerpool_shim.so" "$dir/libcuda.so"
cc -O2 -o "$dir/soak" host/shim/tests/clients/soak.c -I"$cuda/include" -L"$dir" -lcuda
commit="$(git rev-parse --short HEAD)$(git status --porcelain | grep -q . && echo ' (dirty)' || true)"
{
    echo "commit: $commit"
    for run in "alloc 1000000" "pool 1000000" "pools 100000" "contexts 100000"; do
        # shellcheck disable=SC2086
        target/release/peerpool sim --topology one_gpu -- "$dir/soak" $run
    done
    # Ten million allocate/free cycles across every device's pools and streams, of sizes up to
    # 4 MiB, 64 live at a time: freed address ranges reused, resident memory flat.
    target/release/peerpool sim --topology eight_gpu_nvswitch -- "$dir/soak" churn 10000000
} | tee "$out"
