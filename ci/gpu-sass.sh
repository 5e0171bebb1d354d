#!/usr/bin/env bash
# Compiles the committed PTX to sm_90 machine code with CUDA's ptxas (on a GPU machine: the
# rust machine has no CUDA) and writes the cubin and its source record into OUT_DIR; copy both
# into kernels/ptx/ and commit them. build.rs embeds the cubin only while the record's sha256
# is the embedded PTX's. Usage: ci/gpu-sass.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-out/sass}
mkdir -p "$out"
ptx=kernels/ptx/peerpool_kernels.ptx
ptxas -arch=sm_90 -O3 -v "$ptx" -o "$out/peerpool_kernels.sm_90.cubin" 2> "$out/ptxas.txt"
{
    echo "# What peerpool_kernels.sm_90.cubin was compiled from and with. ci/gpu-sass.sh, run on a"
    echo "# machine with CUDA's ptxas, writes both files; build.rs embeds the cubin only while the"
    echo "# sha256 below is the embedded PTX's."
    echo "ptx-sha256 $(sha256sum "$ptx" | cut -d' ' -f1)"
    echo "ptxas $(ptxas --version | tail -n 2 | head -n 1)"
    echo "command ptxas -arch=sm_90 -O3 $ptx"
} > "$out/peerpool_kernels.sm_90.cubin.source"
cat "$out/peerpool_kernels.sm_90.cubin.source"
