#!/usr/bin/env bash
# On a GPU machine, from the folder ci/cudart-bundle.sh made: each program on NVIDIA's runtime,
# then on peerpool's (preloaded), both over NVIDIA's driver; the calls benchmark five times
# each way, alternating. NVIDIA's outputs are compared with what the simulator's tests expect.
# Usage: cudart-side-by-side.sh OUT   (prints what differs; OUT/cudart-records.tar.gz holds all)
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
for round in 1 2 3 4 5; do
    (cd "$G" && LD_LIBRARY_PATH="$G/nv13" ./calls > "$O/calls.nvidia.$round.txt" 2>&1)
    (cd "$G" && LD_LIBRARY_PATH="$G/nv13" LD_PRELOAD="$G/pp/libcudart.so.13" ./calls > "$O/calls.peerpool.$round.txt" 2>&1)
done
for f in "$O"/*.nvidia.txt; do
    p="${f%.nvidia.txt}.peerpool.txt"
    if cmp -s "$f" "$p"; then echo "same: $(basename "${f%.nvidia.txt}")"; else echo "DIFFERENT: $(basename "${f%.nvidia.txt}")"; diff "$f" "$p" | head -20; fi
done
expect() { # name expected-file [pattern of the lines only two GPUs print]
    want() { grep -v -e "${3:-^$^}" "$G/expected/$2"; echo "exit 0"; }
    if cmp -s "$O/$1.nvidia.txt" <(want "$@"); then echo "as the simulator's tests expect: $1"
    else echo "NOT AS EXPECTED: $1"; diff <(want "$@") "$O/$1.nvidia.txt" | head -20; fi
}
expect pool_peers pool_peers.one.txt
expect semantics semantics.txt
expect semantics_ptds semantics.txt
expect host12 host12.txt "^peer copy after the grant"
head -5 "$O"/calls.*.txt
cp "$G/commit.txt" "$O/"
(cd "$O" && tar czf cudart-records.tar.gz --remove-files ./*.txt)
