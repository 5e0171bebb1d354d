#!/usr/bin/env bash
# Builds globals.cu in each -gencode form of the table the gencode client is run over: nvcc's
# usual form for one architecture and for two, PTX alone, machine code alone, and
# architecture-specific code, each as a fatbin named <label>-<form>.fatbin, and PTX text.
# Usage: gencode.sh OUT_DIR LABEL   (NVIDIA's nvcc first on PATH: the label names its version)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
label=$2
sm80=(-gencode 'arch=compute_80,code=[sm_80,compute_80]')
sm90=(-gencode 'arch=compute_90,code=[sm_90,compute_90]')
forms=(
    "sm80_compute80:${sm80[*]}"
    "sm90_compute90:${sm90[*]}"
    "sm80_compute80_sm90_compute90:${sm80[*]} ${sm90[*]}"
    "compute80:-gencode arch=compute_80,code=compute_80"
    "sm80:-gencode arch=compute_80,code=sm_80"
    "sm90:-gencode arch=compute_90,code=sm_90"
    "sm90a_compute90a:-gencode arch=compute_90a,code=[sm_90a,compute_90a]"
    "compute100:-gencode arch=compute_100,code=compute_100"
)
for form in "${forms[@]}"; do
    name=${form%%:*}
    read -r -a flags <<< "${form#*:}"
    nvcc -fatbin "${flags[@]}" "$here/globals.cu" -o "$out/$label-$name.fatbin"
done
nvcc -ptx -arch=compute_80 "$here/globals.cu" -o "$out/$label-ptx80.ptx"
