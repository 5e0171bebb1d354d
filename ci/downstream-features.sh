#!/usr/bin/env bash
# Crates that choose cudarc's features themselves build and test against peerpool, which leaves
# both choices to them: fixtures/examples/cudarc-dynamic-linking (cudarc links libcuda when it
# is built; cudarc refuses that beside `dynamic-loading`) and fixtures/examples/cudarc-12080
# (CUDA 12.8's bindings, asserted when its test compiles); the library and the fixtures compile
# on the other versions they offer. And the library peerpool carries no NVML (only the command
# turns on its `nvml` feature).
#
# What it proves here, without a driver: both crates build, link and run their trials through
# peerpool's libcuda shim. The dynamic-linking crate is linked against the shim (named
# libcuda.so in a CUDA_HOME of its own, as a toolkit's stub would be), and its test binary must
# need libcuda.so.1; it cannot start where no libcuda is found, so it runs under `peerpool sim`
# only. On a GPU machine the same runs happen on the shim, not on the GPUs.
# Usage: ci/downstream-features.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=target/downstream-features
rm -rf "$out" && mkdir -p "$out"

echo "== the library has no NVML; the command does"
if cargo tree -q -p peerpool -e normal | grep -q nvml; then
    echo "peerpool depends on NVML by default (cargo tree -p peerpool -e normal)" >&2
    exit 1
fi
cargo tree -q -p peerpool -e normal --features nvml | grep -q nvml-wrapper
cargo tree -q -p peerpool-cli -e normal | grep -q nvml-wrapper

export CARGO_TARGET_DIR="$root/target"
# Workspaces of their own: the workspace's line-tables-only profile does not reach them.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
unset PEERPOOL_REQUIRE_GPUS
cargo build --release -q -p peerpool-cli -p peerpool-shim
peerpool="$root/target/release/peerpool"
. ci/expect.sh

echo "== the library and the fixtures on each version of cudarc's bindings they offer"
# 13.0 is the workspace's and 12.8 the crate's below; the others are compiled only.
for version in 12090 13010; do
    cargo check -q -p peerpool-fixtures --no-default-features --features "cuda-$version"
done

echo "== cudarc on CUDA 12.8's bindings"
crate=fixtures/examples/cudarc-12080
(cd "$crate" && cargo build -q --tests)
set +e
if ! "$peerpool" facts >/dev/null 2>&1; then
    (cd "$crate" && cargo test) > "$out/12080.txt" 2>&1
    expect 0 $? "$out/12080.txt" "0 passed; 0 failed; 2 ignored" "gpu0->gpu1: no CUDA driver"
fi
(cd "$crate" && "$peerpool" sim --topology two_h200_nvlink -- cargo test) > "$out/12080-shim.txt" 2>&1
expect 0 $? "$out/12080-shim.txt" "2 passed; 0 failed; 0 ignored"
set -e

echo "== cudarc linking libcuda when it is built"
crate=fixtures/examples/cudarc-dynamic-linking
mkdir -p "$out/cuda/lib"
ln -sf "$root/target/release/libpeerpool_shim.so" "$out/cuda/lib/libcuda.so"
# cudarc's build script searches $CUDA_HOME/lib for the libraries it links.
export CUDA_HOME="$root/$out/cuda"
(cd "$crate" && cargo build -q --tests)
suite=$(cd "$crate" && cargo test --no-run 2>&1 | sed -n 's/.*Executable tests\/pairs.rs (\(.*\))$/\1/p')
readelf -d "$suite" | grep -q 'NEEDED.*\[libcuda\.so\.1\]' || {
    echo "$suite does not link libcuda" >&2
    exit 1
}
set +e
(cd "$crate" && "$peerpool" sim --topology four_gpu_islands -- cargo test) > "$out/linking-shim.txt" 2>&1
expect 0 $? "$out/linking-shim.txt" "4 passed; 0 failed; 8 ignored"
set -e
echo "downstream features: both crates build and pass on the shim"
