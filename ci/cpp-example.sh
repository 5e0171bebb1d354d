#!/usr/bin/env bash
# The C++ downstream example (fixtures/examples/cpp-grants) through the C++ CI template
# (templates/ci/cpp-github-actions.yml), its lines run as GitHub Actions would run them
# (ci/templates.py --cpp): CMake, Ninja and GoogleTest from Debian's packages, CUDA 13.0's nvcc
# from PyPI, its tests run by CTest under `peerpool sim` on three topologies and under three
# fault rules, on peerpool's CUDA runtime.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null || [ ! -d /usr/lib/x86_64-linux-gnu/cmake/GTest ]; then
    sudo=
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y -q cmake ninja-build libgtest-dev >/dev/null
fi
cargo build --release -q -p peerpool-cli -p peerpool-shim -p peerpool-cudart12 -p peerpool-cudart13
python="${PEERPOOL_PYTHON:-python3}"
"$python" ci/templates.py --cpp
