#!/usr/bin/env bash
# Runs a bundle of ci/ptx-kernels-bundle.sh from a checkout of its commit, on every core, with
# NVIDIA's libcuda hidden where it can be (root and a mount namespace of its own), so that every
# suite meets the simulator as on a machine without a GPU. Writes environment.txt and
# nextest.log to $OUT (default ./ptxk-out). Arguments go to nextest (a filter, say).
# Usage: BUNDLE/run.sh [nextest args...]
set -u
bundle=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-ptxk-out}
mkdir -p "$out"
if [ "${PTXK_HIDDEN:-}" != 1 ] && [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
    export PTXK_HIDDEN=1
    exec unshare -m --propagation private bash -c '
        for lib in $(ldconfig -p | awk "/libcuda\\.so/ {print \$NF}"); do
            [ -e "$lib" ] && mount --bind /dev/null "$(readlink -f "$lib")" && echo "hidden: $lib"
        done
        exec "$0" "$@"' "$0" "$@"
fi
# The repository's profiles, with room for the checks of 8 and 16 GPUs run from PTX.
config=$(mktemp)
cat > "$config" <<'TOML'
[profile.long]
fail-fast = false
slow-timeout = { period = "60s", terminate-after = 9 }
[test-groups]
gpu = { max-threads = 1 }
TOML
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1)
{
    echo "commit: $(tr '\n' ' ' < "$bundle/COMMIT")"
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(uname -srm), $(nproc) cores"
    echo "libcuda hidden: ${PTXK_HIDDEN:-no}"
    echo "nvcc: ${nvcc:-none}"
} | tee "$out/environment.txt"
export PEERPOOL_SHIM=$bundle/libpeerpool_shim.so
if [ -n "$nvcc" ]; then
    export PEERPOOL_NVCC=$nvcc PEERPOOL_CUDA_INCLUDE=$(dirname "$(dirname "$nvcc")")/include
fi
start=$(date +%s)
timeout "${PTXK_TIMEOUT:-585}" "$bundle/cargo-nextest" nextest run --archive-file "$bundle/tests.tar.zst" \
    --workspace-remap . --config-file "$config" --profile long -j "$(nproc)" --no-fail-fast "$@" \
    > "$out/nextest.log" 2>&1
status=$?
echo "nextest exit: $status after $(( $(date +%s) - start )) s" | tee -a "$out/environment.txt"
tail -30 "$out/nextest.log"
exit $status
