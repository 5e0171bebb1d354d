#!/usr/bin/env bash
# The C++ downstream example (fixtures/examples/cpp-grants): built with CMake, Ninja and
# GoogleTest from Debian's packages and CUDA 13.0's nvcc from PyPI, its tests run by CTest under
# `peerpool sim` on three topologies and under three fault rules, on peerpool's CUDA runtime.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null || [ ! -d /usr/lib/x86_64-linux-gnu/cmake/GTest ]; then
    sudo=
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y -q cmake ninja-build libgtest-dev >/dev/null
fi
cuda="$(ci/cuda-wheels.sh)"
# The wheel carries libcudart.so.13 alone: CMake links `-lcudart`.
mkdir -p target/cuda-link
ln -sf "$cuda/lib/libcudart.so.13" target/cuda-link/libcudart.so
cargo build -q -p peerpool-cli -p peerpool-shim -p peerpool-cudart13
build=target/cpp-grants
rm -rf "$build"
cmake -S fixtures/examples/cpp-grants -B "$build" -G Ninja -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
    -DCMAKE_CUDA_FLAGS="-L$cuda/lib -L$PWD/target/cuda-link" -DPEERPOOL="$PWD/target/debug/peerpool" >/dev/null
cmake --build "$build" >/dev/null
ctest --test-dir "$build" --output-on-failure | tee target/cpp-grants.txt
grep -q "100% tests passed, 0 tests failed out of 6" target/cpp-grants.txt
