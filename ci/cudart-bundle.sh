#!/usr/bin/env bash
# Builds what the side-by-side record of the CUDA runtime needs on a GPU machine, into DIR:
# NVIDIA's runtimes (PyPI: 13.0 and 12.9), peerpool's (release), the programs of
# host/cudart/tests/programs and the calls benchmark, built against the shared runtime, and
# ci/cudart-side-by-side.sh, which runs them there. Usage: ci/cudart-bundle.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:?usage: ci/cudart-bundle.sh DIR}"
rm -rf "$dir"
mkdir -p "$dir/nv13" "$dir/nv12" "$dir/pp" "$dir/link"
cuda="$(ci/cuda-wheels.sh)"
cuda12="$(ci/cuda12-wheels.sh)"
cargo build --release -q -p peerpool-cudart12 -p peerpool-cudart13
cp "$cuda/lib/libcudart.so.13" "$dir/nv13/"
cp "$cuda12/cuda_runtime/lib/libcudart.so.12" "$dir/nv12/"
for major in 12 13; do
    cp "target/release/libpeerpool_cudart$major.so" "$dir/pp/libcudart.so.$major"
    strip "$dir/pp/libcudart.so.$major"
done
ln -s "$cuda/lib/libcudart.so.13" "$dir/link/libcudart.so"
gen=(-gencode 'arch=compute_80,code=[sm_80,compute_80]' -gencode 'arch=compute_90,code=[sm_90,compute_90]')
nvcc() { PATH="$cuda/bin:$PATH" "$cuda/bin/nvcc" -cudart shared "${gen[@]}" -I"$cuda/include" -L"$dir/link" -L"$cuda/lib" "$@"; }
programs=host/cudart/tests/programs
nvcc "$programs/pool_peers.cu" -o "$dir/pool_peers"
# semantics.cu calls the driver API too: linked against the shim's libcuda.so.1 name here.
cargo build -q -p peerpool-shim
ln -s "$PWD/target/debug/libpeerpool_shim.so" "$dir/link/libcuda.so"
nvcc "$programs/semantics.cu" -lcuda -o "$dir/semantics"
nvcc --default-stream per-thread "$programs/semantics.cu" -lcuda -o "$dir/semantics_ptds"
nvcc -O2 host/cudart/benches/calls.cu -o "$dir/calls"
c++ -I"$cuda12/cuda_runtime/include" -I"$cuda12/cuda_nvcc/include" "$programs/host12.cpp" \
    "$cuda12/cuda_runtime/lib/libcudart.so.12" -o "$dir/host12"
rm -rf "$dir/link"
# What the simulator's tests expect of each program: NVIDIA's runtime must print the same.
mkdir -p "$dir/expected"
cp "$programs/pool_peers.one.txt" "$programs/semantics.txt" "$programs/host12.txt" "$dir/expected/"
git rev-parse --short HEAD > "$dir/commit.txt"
cp ci/cudart-side-by-side.sh "$dir/"
du -sh "$dir" >&2
