#!/usr/bin/env bash
# The shim's real backend on a GPU machine (`peerpool sim --real`), from a bundle made by
# ci/gpu-bundle.sh and a checkout of the same commit: the suites through it with no rule, the
# grant benchmark and the cost of one cheap call direct and through it (with and without a
# trace), the cudarc allocator under an injected fault, fault rules before/after/sticky on
# NVIDIA's driver, an unmodified PyTorch program traced with both of its allocators, and bad
# settings. Needs cc and CUDA's cuda.h ($CUDA_HOME/include, default /usr/local/cuda).
# Usage: ci/gpu-passthrough.sh [BUNDLE_DIR] [OUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
default_out=gpu-out/passthrough
. ci/bundle-args.sh "$@"
pp="$bundle/peerpool"
inc="${CUDA_HOME:-/usr/local/cuda}/include"
real=(sim --real)
{
    echo "commit: $(cat "$bundle/COMMIT" | tr '\n' ' ')"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    ldconfig -p 2>/dev/null | grep 'libcuda\.so'
    nvidia-smi --query-gpu=index,name,driver_version --format=csv 2>&1
} > "$out/environment.txt"

echo "== the suites through the real backend, no rule"
"$pp" "${real[@]}" --trace "$out/suites.trace" -- "$bundle/cargo-nextest" nextest run \
    --archive-file "$bundle/tests.tar.zst" --workspace-remap . --profile gpu > "$out/suites.log" 2>&1
echo "nextest exit: $?" | tee -a "$out/suites.log"
grep -E "Summary" "$out/suites.log"
head -n 1 "$out/suites.trace"
gzip -f "$out/suites.trace"

echo "== grant benchmark, direct and through, alternating"
for i in 1 2 3; do
    "$bundle/grant_bench" 200 > "$out/grant_direct_$i.json" 2>/dev/null
    "$pp" "${real[@]}" -- "$bundle/grant_bench" 200 > "$out/grant_through_$i.json" 2>/dev/null
done
grep -h '"warm_grant_engine_over_raw"' "$out"/grant_*.json

echo "== one cheap call (cuCtxGetCurrent), direct and through, without and with a trace"
cc -O2 -o "$out/call_cost" host/shim/tests/clients/call_cost.c -I"$inc" -lcuda
for i in 1 2 3; do
    echo "direct $("$out/call_cost")" >> "$out/call_cost.txt"
    echo "through $("$pp" "${real[@]}" -- "$out/call_cost")" >> "$out/call_cost.txt"
    echo "traced $("$pp" "${real[@]}" --trace /dev/null -- "$out/call_cost" 100000 11)" >> "$out/call_cost.txt"
done
cat "$out/call_cost.txt"

echo "== the cudarc allocator meets an injected fault, before and after"
for timing in "" '!after'; do
    "$pp" "${real[@]}" --faults "cuMemPoolSetAccess@2=OUT_OF_MEMORY$timing" -- "$bundle/cargo-nextest" nextest run \
        --archive-file "$bundle/tests.tar.zst" --workspace-remap . -E 'binary(injected)' --no-capture \
        > "$out/injected${timing:+_after}.log" 2>&1
    echo "injected '$timing' exit: $?" | tee -a "$out/injected${timing:+_after}.log"
    grep -E "allocator said|PASS|FAIL|SKIP" "$out/injected${timing:+_after}.log"
done

echo "== fault rules on NVIDIA's driver"
cc -o "$out/rules" host/shim/tests/clients/rules.c -I"$inc" -lcuda
for rule in "" 'cuMemAlloc@1=OUT_OF_MEMORY' 'cuMemAlloc@1=OUT_OF_MEMORY!after' 'cuMemAlloc@1=ILLEGAL_ADDRESS'; do
    echo "-- rule '$rule'" >> "$out/rules.txt"
    "$pp" "${real[@]}" --faults "$rule" -- "$out/rules" >> "$out/rules.txt" 2>&1
done
cat "$out/rules.txt"

echo "== PyTorch, unmodified, traced"
"$pp" "${real[@]}" --trace "$out/torch-default.trace" -- python3 ci/torch_peer_copy.py > "$out/torch-default.txt" 2>&1
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$pp" "${real[@]}" --trace "$out/torch-async.trace" -- \
    python3 ci/torch_peer_copy.py > "$out/torch-async.txt" 2>&1
for run in default async; do
    echo "-- $run: $(tail -n 1 "$out/torch-$run.txt")"
    grep -v '^#' "$out/torch-$run.trace" | awk '{print $1}' | sort | uniq -c | sort -rn \
        | grep -E 'Peer|Pool|MallocAsync|AllocAsync|FreeAsync|cuMemcpy' > "$out/torch-$run.calls.txt"
    cat "$out/torch-$run.calls.txt"
    gzip -f "$out/torch-$run.trace"
done

echo "== bad settings"
{
    "$pp" "${real[@]}" --libcuda /nonexistent/libcuda.so.1 -- true; echo "exit $?"
    # The shim first on the path (where `peerpool sim` linked it), a file that is no library named:
    LD_LIBRARY_PATH="$bundle/peerpool-libcuda" PEERPOOL_SHIM_BACKEND=real PEERPOOL_SHIM_LIBCUDA=/etc/hostname \
        "$out/rules"; echo "exit $?"
} > "$out/bad_settings.txt" 2>&1
cat "$out/bad_settings.txt"
