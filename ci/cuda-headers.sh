#!/usr/bin/env bash
# Prints, one a line, the include directories of NVIDIA's CUDA 13.0 and CUDA 12.9 headers, from
# PyPI (ci/cuda-wheels.sh and ci/cuda12-wheels.sh). The shim must export every entry point
# either header set declares (host/shim/tools/unsupported.py); peerpool's runtime lays out its
# structs as each does (host/cudart/tests/layouts.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "$(ci/cuda-wheels.sh)/include"
echo "$(ci/cuda12-wheels.sh)/cuda_runtime/include"
