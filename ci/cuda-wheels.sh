#!/usr/bin/env bash
# Installs NVIDIA's CUDA 13.0 compiler, headers and runtime from PyPI into target/cuda-venv (once;
# pip's cache makes a fresh install quick) and prints the directory that holds bin/nvcc,
# include/cuda.h and lib/. Nothing else is printed on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/cuda-venv
wheels=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-nvrtc==13.0.88
    nvidia-cuda-cccl==13.0.85)
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/pip" show -q nvidia-cuda-nvrtc >/dev/null 2>&1; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "${wheels[@]}" >&2
fi
"$venv/bin/python" -c 'import nvidia.cu13, os; print(os.path.realpath(nvidia.cu13.__path__[0]))'
