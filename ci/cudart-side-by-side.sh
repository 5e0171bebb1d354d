#!/usr/bin/env bash
# On a GPU machine, from the folder ci/cudart-bundle.sh made: each program on NVIDIA's runtime,
# then on peerpool's (preloaded), both over NVIDIA's driver; the calls benchmark three times
# each way, alternating. Usage: cudart-side-by-side.sh OUT   (prints what differs)
set -u
G="$(cd "$(dirname "$0")" && pwd)"
O="$1"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$O/gpu.txt" 2>&1
uname -r >> "$O/gpu.txt"
side() { # name major args...
    local name=$1 major=$2; shift 2
    (cd "$G" && LD_LIBRARY_PATH="$G/nv$major" timeout 120 "./$name" "$@" > "$O/$name.nvidia.txt" 2>&1; echo "exit $?" >> "$O/$name.nvidia.txt")
    (cd "$G" && LD_LIBRARY_PATH="$G/nv$major" LD_PRELOAD="$G/pp/libcudart.so.$major" timeout 120 "./$name" "$@" > "$O/$name.peerpool.txt" 2>&1; echo "exit $?" >> "$O/$name.peerpool.txt")
}
side pool_peers 13 one
side semantics 13
side semantics_ptds 13
side host12 12
for round in 1 2 3; do
    (cd "$G" && LD_LIBRARY_PATH="$G/nv13" ./calls > "$O/calls.nvidia.$round.txt" 2>&1)
    (cd "$G" && LD_LIBRARY_PATH="$G/nv13" LD_PRELOAD="$G/pp/libcudart.so.13" ./calls > "$O/calls.peerpool.$round.txt" 2>&1)
done
for f in "$O"/*.nvidia.txt; do
    p="${f%.nvidia.txt}.peerpool.txt"
    if cmp -s "$f" "$p"; then echo "same: $(basename "${f%.nvidia.txt}")"; else echo "DIFFERENT: $(basename "${f%.nvidia.txt}")"; diff "$f" "$p" | head -20; fi
done
head -5 "$O"/calls.*.txt
