#!/usr/bin/env bash
# Builds contexts.c against the machine's CUDA driver and runs each mode. Usage: run.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")"
out=${1:-out}
mkdir -p "$out"
inc=$(dirname "$(command -v nvcc)")/../include # the toolkit nvcc belongs to
gcc -O2 -Wall -I"$inc" -o /tmp/contexts contexts.c -lcuda > "$out/build.txt" 2>&1 || { cat "$out/build.txt"; exit 1; }
{
    nvidia-smi --query-gpu=name,driver_version,persistence_mode,compute_mode --format=csv
    nvidia-smi -q | grep -iE "Persistence|Addressing|Virtualization" | head
} > "$out/gpu.txt" 2>&1
# With a mode's name as $2 and after, runs that mode alone (three times).
if [ $# -ge 2 ]; then
    for i in 1 2 3; do echo "== $2 $i"; timeout 120 /tmp/contexts "${@:2}"; echo "exit: $?"; done > "$out/$2.jsonl.txt" 2>&1
    exit 0
fi
run() { # name, args...
    local name=$1; shift
    echo "== $name: contexts $*" >> "$out/contexts.jsonl.txt"
    timeout 120 /tmp/contexts "$@" >> "$out/contexts.jsonl.txt" 2>&1
    echo "exit: $?" >> "$out/contexts.jsonl.txt"
}
for i in 1 2 3; do run "timing $i" timing; done
run isolation-created isolation created
run isolation-green isolation green
run cycles cycles 8
for n in 1 2 4 8; do run "concurrent $n" concurrent "$n"; done
for i in 1 2 3; do run "after_fault $i" after_fault; done
