#!/usr/bin/env bash
# Installs CUDA 12.9's runtime and headers from PyPI into a virtual environment of its own
# (target/cuda12-venv, once; pip's cache makes a fresh install quick) and prints the folder
# that holds cuda_runtime/ (include/, lib/libcudart.so.12) and cuda_nvcc/ (include/crt/).
# Nothing else is printed on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/cuda12-venv
wheels=(nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-nvcc-cu12==12.9.86)
missing=0
for wheel in "${wheels[@]%%==*}"; do
    "$venv/bin/pip" show -q "$wheel" >/dev/null 2>&1 || missing=1
done
if [ "$missing" = 1 ]; then
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "${wheels[@]}" >&2
fi
"$venv/bin/python" -c 'import nvidia.cuda_runtime, os; print(os.path.realpath(os.path.dirname(nvidia.cuda_runtime.__path__[0])))'
