#!/usr/bin/env bash
# Builds kernels.cu into the images the foreign-image client loads: PTX, an sm_90 cubin, and
# fatbins (sm_90 machine code and compute_90 PTX): uncompressed, as nvcc compresses by default
# (PTX only), and with every entry compressed in the size mode; and errors.cu into PTX (compiled
# from its own directory, so that an assert names the file as errors.cu).
# Usage: build.sh OUT_DIR   (NVIDIA's nvcc first on PATH; the PyPI wheel nvidia-cuda-nvcc works)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
nvcc -ptx -arch=compute_90 "$here/kernels.cu" -o "$out/kernels.ptx"
nvcc -cubin -arch=sm_90 "$here/kernels.cu" -o "$out/kernels.cubin"
gen=(-gencode 'arch=compute_90,code=[sm_90,compute_90]')
nvcc -fatbin "${gen[@]}" -Xfatbin=-compress=false "$here/kernels.cu" -o "$out/kernels.fatbin"
nvcc -fatbin "${gen[@]}" "$here/kernels.cu" -o "$out/kernels.default.fatbin"
nvcc -fatbin "${gen[@]}" -Xfatbin=-compress-all -Xfatbin=-compress-mode=size "$here/kernels.cu" -o "$out/kernels.compressed.fatbin"
(cd "$here" && nvcc -ptx -arch=compute_90 errors.cu -o "$out/errors.ptx")
