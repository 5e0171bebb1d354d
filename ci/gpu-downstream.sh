#!/usr/bin/env bash
# What a downstream GPU job needs shown on a GPU machine, from a bundle made by ci/gpu-bundle.sh and a checkout
# of the same commit, with the GPUs required (PEERPOOL_REQUIRE_GPUS, default 2):
#  - `peerpool check`: the verdict matrix with each pair's link from NVML (OK NV18);
#  - the archived suites from a copy of the checkout at a path unlike the build's
#    (ci/gpu-elsewhere.sh): trials.txt (the names, compared with the build machine's in
#    trials-missing.txt), nextest's log and JUnit, the merged report and its JUnit;
#  - the GPUs hidden from CUDA (CUDA_VISIBLE_DEVICES=""): `peerpool check` must exit 69 and a
#    suite must refuse to list itself (its binary exits 69, nextest 104): the GPU job cannot pass
#    without its GPUs.
# Usage: ci/gpu-downstream.sh [BUNDLE_DIR] [OUT_DIR]   (writes OUT_DIR/summary.txt last)
set -uo pipefail
cd "$(dirname "$0")/.."
default_out=gpu-out/downstream
. ci/bundle-args.sh "$@"
export PEERPOOL_REQUIRE_GPUS=${PEERPOOL_REQUIRE_GPUS:-2}
"$bundle/peerpool" check --quiet --out "$out/check" > "$out/check.txt" 2>&1
check=$?
ci/gpu-elsewhere.sh "$bundle" "$out/suites" > "$out/suites.log" 2>&1
suites=$?
{
    echo "== peerpool check, the GPUs hidden (CUDA_VISIBLE_DEVICES=\"\")"
    CUDA_VISIBLE_DEVICES="" "$bundle/peerpool" check --quiet --out "$out/hidden-check"
    echo "peerpool check exit: $?"
    echo "== the grant suite, the GPUs hidden"
    CUDA_VISIBLE_DEVICES="" "$bundle/cargo-nextest" nextest run --archive-file "$bundle/tests.tar.zst" \
        --workspace-remap . -E 'binary(grant)'
    echo "nextest exit: $?"
} > "$out/gpus-hidden.txt" 2>&1
hidden_check=$(sed -n 's/^peerpool check exit: //p' "$out/gpus-hidden.txt")
hidden_nextest=$(sed -n 's/^nextest exit: //p' "$out/gpus-hidden.txt")
{
    echo "commit: $(head -n 1 "$bundle/COMMIT")"
    echo "PEERPOOL_REQUIRE_GPUS: $PEERPOOL_REQUIRE_GPUS"
    echo "peerpool check exit: $check (0 expected)"
    sed -n '/GPU0/,/^$/p' "$out/check.txt"
    echo "suites from elsewhere exit: $suites (0 expected)"
    cat "$out/suites/paths.txt" 2>/dev/null
    grep -E "Summary|listed here by the same name|passed, .* failed" "$out/suites/nextest.log" 2>/dev/null
    echo "GPUs hidden: peerpool check exit $hidden_check (69 expected), nextest exit $hidden_nextest (104 expected)"
} > "$out/summary.txt"
cat "$out/summary.txt"
[ "$check" = 0 ] && [ "$suites" = 0 ] && [ "$hidden_check" = 69 ] && [ "$hidden_nextest" = 104 ]
