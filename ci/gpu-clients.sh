#!/usr/bin/env bash
# On a GPU machine, from a bundle made by ci/clients-bundle.sh: what NVIDIA's driver answers to
# the shim's clients (the records the simulator is compared with), the same clients through the
# pass-through (`peerpool sim --real`, which must not change an answer), cuda.core's staging and
# pool sharing, and the CUDA-runtime programs and PyTorch, traced through the pass-through with
# the driver's private tables wrapped (what the runtime asks of the driver at start-up).
# Usage: ci/gpu-clients.sh [BUNDLE_DIR] [OUT_DIR]
# PEERPOOL_CLIENTS="corpus corpus_nvrtc gencode_*" runs only the clients it names (or matches).
set -uo pipefail
cd "$(dirname "$0")/.."
default_out=gpu-out/clients
. ci/bundle-args.sh "${1:-.gpu/clients}" "${2:-}"
b="$bundle"
real=("$b/peerpool" sim --shim "$b/libpeerpool_shim.so" --real)
{
    echo "commit: $(tr '\n' ' ' < "$b/COMMIT")"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=index,name,driver_version --format=csv 2>&1
    python3 -c 'import cuda.core, cuda.bindings; print("cuda.core", cuda.core.__version__, "cuda.bindings", cuda.bindings.__version__)' 2>&1
    python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
} > "$out/environment.txt"
cat "$out/environment.txt"
mkdir -p "$out/recorded" "$out/through"

# One client: run against NVIDIA's libcuda, then through the pass-through; the two must agree.
client() {
    local name=$1
    shift
    local - wanted=0 pattern
    set -f # the patterns are matched against names, not expanded into files
    for pattern in ${PEERPOOL_CLIENTS:-"$name"}; do
        # shellcheck disable=SC2053 # a pattern: gencode_* names every image of the table
        [[ $name == $pattern ]] && wanted=1
    done
    [ "$wanted" = 1 ] || return
    "$@" > "$out/recorded/$name.txt" 2> "$out/recorded/$name.stderr"
    echo "rc $?" >> "$out/recorded/$name.stderr"
    "${real[@]}" --trace "$out/through/$name.trace" -- "$@" > "$out/through/$name.txt" 2> "$out/through/$name.stderr"
    echo "rc $?" >> "$out/through/$name.stderr"
    if cmp -s "$out/recorded/$name.txt" "$out/through/$name.txt"; then
        echo "$name: $(wc -l < "$out/recorded/$name.txt") lines, the same through the pass-through"
    else
        echo "$name: DIFFERS through the pass-through"
    fi
}
client attributes "$b/attributes"
client host_memory "$b/host_memory"
client managed "$b/managed"
client outside_kernels "$b/outside_kernels"
client images "$b/images" "$b/image-files"
client images_launch "$b/images" "$b/image-files" launch
client kernels "$b/kernels" "$b/image-files"
client kernels_link "$b/kernels" "$b/image-files" link
client kernels_assert "$b/kernels" "$b/image-files" assert
client kernels_trap "$b/kernels" "$b/image-files" trap
# The -gencode table: each image as a module and as a library, launched where it loads.
for image in "$b"/gencode-files/*; do
    form=$(basename "$image")
    client "gencode_${form%.*}" "$b/gencode" "$image"
done
client jit_logs "$b/jit_logs"
client hardening "$b/hardening"
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    client kernels_peer "$b/kernels" "$b/image-files" peer
fi
client corpus "$b/corpus" "$b/corpus-files"
client corpus_nvrtc "$b/corpus" "$b/corpus-files" corpus.nvrtc.ptx
client corpus_fast_math "$b/corpus_fast_math" "$b/corpus-files"
client corpus_cooperative "$b/corpus" "$b/corpus-files" corpus.ptx cooperative
client corpus_first_ordinary "$b/corpus" "$b/corpus-files" corpus.ptx first-ordinary
client corpus_clusters "$b/corpus" "$b/corpus-files" corpus.ptx clusters
client corpus_rustc "$b/corpus" "$b/rustc-files" kernels.ptx
client cluster_occupancy "$b/cluster_occupancy"
client implicit_ret "$b/implicit_ret"
client ptx_random "$b/ptx_random" "$b/ptx-random-programs"
client ptx_random_halves "$b/ptx_random" "$b/ptx-random-halves"
# NVRTC is the GPU machine's own (cudarc loads it by name).
LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" client cudarc_nvrtc "$b/cudarc-nvrtc"
client staging python3 "$b/staging.py"
# numba-cuda's kernels, alone and linked with other PTX (the machine's numba-cuda; a numpy it
# imports with comes first on PYTHONPATH when the machine's own is too new for it).
client numba_kernels python3 "$b/numba_kernels.py"
client numba_linked python3 "$b/numba_linked.py"
client numba_probe python3 "$b/numba_probe.py" --save "$out/recorded/numba_probe.npz"
client pool_ipc python3 "$b/pool_ipc.py"
for f in "$out"/recorded/*.stderr; do echo "-- $(basename "$f"): $(tail -n 1 "$f")"; done
# Every call each client made, how often (the coverage table's input), then the trace itself.
for t in "$out"/through/*.trace; do
    grep -v '^#' "$t" | awk '{print $1}' | sort | uniq -c | sort -rn > "${t%.trace}.calls.txt"
    gzip -f "$t"
done

# Only the clients named: what follows is left out.
if [ -n "${PEERPOOL_CLIENTS:-}" ]; then exit 0; fi

echo "== one cheap call (cuCtxGetCurrent): NVIDIA's driver against the simulator, alternating"
for i in 1 2 3; do
    echo "driver $("$b/call_cost")" >> "$out/call_cost.txt"
    echo "simulator $("$b/peerpool" sim --shim "$b/libpeerpool_shim.so" --topology one_gpu -- "$b/call_cost")" >> "$out/call_cost.txt"
done
cat "$out/call_cost.txt"

echo "== CUDA-runtime programs and PyTorch, directly and traced through the pass-through"
mkdir -p "$out/runtime"
for prog in allocator_static allocator_shared; do
    "$b/$prog" > "$out/runtime/$prog.txt" 2>&1
    echo "$prog direct: rc $? $(tail -n 1 "$out/runtime/$prog.txt")"
    "${real[@]}" --trace "$out/runtime/$prog.trace" -- "$b/$prog" launch > "$out/runtime/$prog.launch.txt" 2>&1
    echo "$prog through, launching: rc $? $(tail -n 1 "$out/runtime/$prog.launch.txt")"
done
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "${real[@]}" --trace "$out/runtime/torch.trace" -- \
    python3 "$b/torch_staging.py" > "$out/runtime/torch.txt" 2>&1
echo "torch through: rc $? $(tail -n 1 "$out/runtime/torch.txt")"
for t in "$out"/runtime/*.trace; do
    # Which private tables the runtime asked for, and every call it made, how often.
    grep '^cuGetExportTable' "$t" | sort | uniq -c > "${t%.trace}.tables.txt"
    grep -v '^#' "$t" | awk '{print $1}' | sort | uniq -c | sort -rn > "${t%.trace}.calls.txt"
    gzip -f "$t"
done
cat "$out/runtime/allocator_static.tables.txt"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
