#!/usr/bin/env bash
# Installs NVIDIA's CUDA compiler, headers and runtime from PyPI into a virtual environment of
# its own (once; pip's cache makes a fresh install quick) and prints the directory that holds
# bin/nvcc, include/cuda.h and lib/. Nothing else is printed on stdout.
# Usage: ci/cuda-wheels.sh [13.0|13.5]   13.0 (the default, target/cuda-venv) is what the GPU
# machines' driver reads, with NVRTC and CCCL; 13.5 (target/cuda-venv-13.5) is what an unpinned
# `pip install nvidia-cuda-nvcc` gives today, whose PTX is ISA 9.5: its compiler and runtime only.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-13.0}" in
    13.0)
        venv=target/cuda-venv
        wheels=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96
            nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-cccl==13.0.85)
        ;;
    13.5)
        venv=target/cuda-venv-13.5
        wheels=(nvidia-cuda-nvcc==13.5.37 nvidia-nvvm==13.5.37 nvidia-cuda-crt==13.5.37 nvidia-cuda-runtime==13.5.37)
        ;;
    *)
        echo "ci/cuda-wheels.sh: no such CUDA here: $1 (13.0 or 13.5)" >&2
        exit 2
        ;;
esac
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/pip" show -q "${wheels[@]%%==*}" >/dev/null 2>&1; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "${wheels[@]}" >&2
fi
"$venv/bin/python" -c 'import nvidia.cu13, os; print(os.path.realpath(nvidia.cu13.__path__[0]))'
