#!/usr/bin/env bash
# Prints, one a line, the include directories of NVIDIA's CUDA 13.0 and CUDA 12.9 headers, from
# PyPI (13.0 through ci/cuda-wheels.sh; 12.9's runtime wheel into target/cuda12-venv, once). The
# shim must export every entry point either header set declares (host/shim/tools/unsupported.py).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "$(ci/cuda-wheels.sh)/include"
venv=target/cuda12-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/pip" show -q nvidia-cuda-runtime-cu12 >/dev/null 2>&1; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check nvidia-cuda-runtime-cu12==12.9.79 >&2
fi
"$venv/bin/python" -c 'import nvidia.cuda_runtime, os; print(os.path.join(os.path.realpath(nvidia.cuda_runtime.__path__[0]), "include"))'
