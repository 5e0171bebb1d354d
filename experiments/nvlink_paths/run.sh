#!/usr/bin/env bash
# Builds and runs paths.cu on a GPU machine with nvcc, then asks Nsight Compute which NVLink
# metrics it has and reads them for the SM read kernel. Usage: run.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")"
out=${1:-out}
mkdir -p "$out"
nvcc -O3 -arch=sm_90 -o "$out/paths" paths.cu > "$out/build.txt" 2>&1 || { cat "$out/build.txt"; exit 1; }
cuobjdump -sass "$out/paths" | grep -E "UBLKCP|UTMA|LDG.E.128|STG.E.128" | sort | uniq -c > "$out/sass_ops.txt" 2>&1
nvidia-smi nvlink -gt r -i 0 > "$out/nvlink_raw_sample.txt" 2>&1
timeout 300 "$out/paths" > "$out/paths.txt" 2>&1
echo "paths exit: $?" >> "$out/paths.txt"
rm -f "$out/paths"
# Nsight Compute: which NVLink metrics exist here, then those metrics for each kernel kind.
ncu --query-metrics > "$out/ncu_metrics.txt" 2>&1
metrics=$(grep -oE '^nvl[a-z0-9_]+' "$out/ncu_metrics.txt" | sort -u | sed 's/$/.sum/' | paste -sd, -)
echo "metrics: $metrics" > "$out/ncu_nvlink.txt"
if [ -n "$metrics" ]; then
    nvcc -O3 -arch=sm_90 -o /tmp/paths paths.cu >> "$out/build.txt" 2>&1
    timeout 240 ncu --metrics "$metrics" -k regex:'sm_read|sm_write|tma_read|tma_write' -c 8 /tmp/paths quick >> "$out/ncu_nvlink.txt" 2>&1
    echo "ncu exit: $?" >> "$out/ncu_nvlink.txt"
fi
