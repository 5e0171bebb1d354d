#!/usr/bin/env bash
# The suites that skip without a GPU, run through peerpool's real-driver code path (CudaDriver)
# over the libcuda shim, on simulated topologies: every trial must run (no "no CUDA driver"
# skip) and pass; `peerpool check` must print the topology's matrix. Then the clients that know
# nothing of peerpool (C programs linked with -lcuda, the foreign images they load, cuda.core
# scripts, programs on the CUDA runtime), when their tools are installed ($PEERPOOL_CUDA_INCLUDE,
# $PEERPOOL_NVCC, $PEERPOOL_NVCC_NEWEST, $PEERPOOL_PYTHON, $PEERPOOL_CUDA12: .ci/run sets them).
# Usage: ci/shim-matrix.sh [TOPOLOGY ...]   (default: two_h200_nvlink four_gpu_islands eight_gpu_nvswitch)
set -euo pipefail
cd "$(dirname "$0")/.."
topologies=("$@")
if [ ${#topologies[@]} -eq 0 ]; then
    topologies=(two_h200_nvlink four_gpu_islands eight_gpu_nvswitch)
fi
cargo build -q -p peerpool-shim -p peerpool-cli
mkdir -p target/shim-matrix
for t in "${topologies[@]}"; do
    echo "== $t (through the shim)"
    # ipc: this binary exports and runs itself again as the importer, a second process on the shim.
    suites=(--test first_proof --test grant --test model_hw --test ipc)
    # The differential compares the driver with an in-process simulated 2 x H200.
    [ "$t" = two_h200_nvlink ] && suites+=(--test differential)
    log="target/shim-matrix/$t.txt"
    # Two runs: `--test` selects targets in every package named, so the examples (whose tests
    # are `pairs`, `model`, `injected`) go in a run of their own.
    { target/debug/peerpool sim --topology "$t" -- cargo test -p peerpool-tests "${suites[@]}" &&
        target/debug/peerpool sim --topology "$t" -- cargo test -p downstream-allocator -p cudarc-allocator; } \
        > "$log" 2>&1 || {
        echo "suites failed through the shim on $t:" >&2
        grep -E "FAILED|panicked|^error" "$log" >&2 || tail -40 "$log" >&2
        exit 1
    }
    if grep -q "no CUDA driver" "$log"; then
        echo "a trial was skipped for want of a driver on $t: the shim was not loaded" >&2
        exit 1
    fi
    # On the shim the suites know their simulated machine's time: each prints its projection.
    grep -q "projected on the simulated machine" "$log" || {
        echo "the suites printed no projected wall time on $t" >&2
        exit 1
    }
    grep -E "^test result|^peerpool-fixtures: took" "$log" | sed 's/^/    /'
    target/debug/peerpool sim --topology "$t" -- \
        target/debug/peerpool check --quiet --out "target/shim-matrix/check-$t" > "target/shim-matrix/check-$t.txt"
    head -n 1 "target/shim-matrix/check-$t.txt" | grep -q "CUDA driver 13.5" || {
        echo "peerpool check did not run on the shim's driver for $t" >&2
        exit 1
    }
    sed -n '/GPU0/,/^$/p' "target/shim-matrix/check-$t.txt"
done
echo "== GPUs required: the shim's simulated GPUs do not count (peerpool check 69, a suite 69)"
set +e
PEERPOOL_REQUIRE_GPUS=1 target/debug/peerpool sim -- target/debug/peerpool check --quiet \
    --out target/shim-matrix/required > target/shim-matrix/required.txt 2>&1
check_status=$?
PEERPOOL_REQUIRE_GPUS=1 target/debug/peerpool sim -- cargo test -q -p peerpool-tests --test grant \
    >> target/shim-matrix/required.txt 2>&1
suite_status=$?
set -e
if [ "$check_status" != 69 ] || [ "$suite_status" != 69 ] ||
    ! grep -q "simulated by peerpool's libcuda shim" target/shim-matrix/required.txt; then
    echo "GPUs required through the shim: check exited $check_status, the suite $suite_status (69 and 69 expected)" >&2
    cat target/shim-matrix/required.txt >&2
    exit 1
fi
echo "== a driver fault the cudarc allocator did not provoke (the rule by environment)"
target/debug/peerpool sim --faults 'cuMemPoolSetAccess@2=OUT_OF_MEMORY' -- \
    cargo test -q -p cudarc-allocator --test injected 2>&1 | tee target/shim-matrix/injected.txt
grep -q "1 passed; 0 failed; 0 ignored" target/shim-matrix/injected.txt || {
    echo "the injected-fault trial did not run and pass" >&2
    exit 1
}
echo "== clients that know nothing of peerpool, on the simulator and through the forwarding backend"
# Programs on the CUDA runtime run on peerpool's (host/cudart), built here.
cargo build -q -p peerpool-cudart12 -p peerpool-cudart13
cargo test -q -p peerpool-shim --test clients --test forwarding --test one_h200 --test every_entry_point \
    --test topology --test modules --test runtime 2>&1 |
    tee target/shim-matrix/clients.txt
# A cudarc program whose kernels NVRTC (beside $PEERPOOL_NVCC) compiles, through `peerpool sim`.
cargo build -q -p peerpool-cli -p peerpool-shim
cargo test -q -p cudarc-nvrtc --test simulated 2>&1 | tee -a target/shim-matrix/clients.txt
if [ -n "${PEERPOOL_CUDA_INCLUDE:-}" ] && [ -n "${PEERPOOL_PYTHON:-}" ] && [ -n "${PEERPOOL_NVCC:-}" ] &&
    [ -n "${PEERPOOL_NVCC_NEWEST:-}" ] && [ -n "${PEERPOOL_CUDA_HEADERS:-}" ] && [ -n "${PEERPOOL_CUDA12:-}" ]; then
    if [ "$(grep -c "0 failed; 0 ignored" target/shim-matrix/clients.txt)" -ne 8 ]; then
        echo "with every tool given, no client trial may be skipped" >&2
        exit 1
    fi
fi
echo "== peerpool calibrate (ci/gpu-calibrate.sh's), through the shim on two GPUs and on one"
rm -rf target/shim-matrix/calibrate-*
target/debug/peerpool sim --topology two_h200_nvlink -- target/debug/peerpool calibrate \
    --out target/shim-matrix/calibrate-two > target/shim-matrix/calibrate-two.txt 2>&1 || {
    echo "calibrate failed on the simulated 2 x H200" >&2
    tail -20 target/shim-matrix/calibrate-two.txt >&2
    exit 1
}
# The model it wrote is one the simulator takes.
target/debug/peerpool check --quiet --topology two_h200_nvlink --timing target/shim-matrix/calibrate-two/timing.json \
    --out target/shim-matrix/calibrate-two/check > /dev/null
# One GPU: the process costs are measured and the rest is refused (exit 69, fewer GPUs than
# needed, the reason named); no figure may come from the children that asked for a second
# device and failed.
set +e
target/debug/peerpool sim --topology one_gpu -- target/debug/peerpool calibrate \
    --out target/shim-matrix/calibrate-one > target/shim-matrix/calibrate-one.txt 2>&1
one_status=$?
set -e
python3 - target/shim-matrix/calibrate-one "$one_status" <<'PY'
import json, sys
run, status = sys.argv[1], int(sys.argv[2])
raw = json.load(open(f"{run}/calibration.json"))
timing = json.load(open(f"{run}/timing.json"))
problems = []
if status != 69 or raw.get("this_process", {}).get("error") != "needs two GPUs":
    problems.append(f"exit {status}, this_process {raw.get('this_process')} (69 and 'needs two GPUs' expected)")
if raw["processes_alone"]["samples"]["context_second_us"]:
    problems.append("a second device's context was timed on one GPU")
if not raw["processes_alone"]["samples"].get("local_fault_us"):
    problems.append("no fault was timed on the one device")
if raw["processes_at_once"]["context_split_x2"]["speedup"] is not None:
    problems.append("contexts split over two devices were timed on one GPU")
if "only the process costs calibrated" not in timing["machine"]:
    problems.append(f"timing.json's machine does not say it is partial: {timing['machine']}")
if problems:
    sys.exit("calibrate on one GPU: " + "; ".join(problems))
print("    calibrate: two GPUs exit 0; one GPU exit 69, process costs only")
PY
echo "== peerpool check's probe child sees only its pair (CUDA_VISIBLE_DEVICES by UUID) and finds it by UUID"
uuids=$(target/debug/peerpool sim --topology four_gpu_islands -- \
    env PEERPOOL_CHILD_ROLE=calibrate-child target/debug/peerpool -- uuids |
    python3 -c 'import json, sys; print(" ".join(json.loads(sys.stdin.readline())["phases"]["uuids"]))')
read -r u0 _ u2 u3 <<< "$uuids"
probe() {
    # The probe child's call, as `peerpool check` makes it (`peerpool::child`): the role in
    # PEERPOOL_CHILD_ROLE (set for the child alone: `peerpool sim` would take it for its own),
    # the pair by UUID as an argument.
    CUDA_VISIBLE_DEVICES="$u3,$u2" target/debug/peerpool sim --topology four_gpu_islands -- \
        env PEERPOOL_CHILD_ROLE=negative-probe target/debug/peerpool owner="$1" accessor=2 pair="$2,$u2"
}
# gpu3 owns, gpu2 reads without a grant: the fault, in a child whose gpu1 and gpu0 they are.
probe 3 "$u3" | grep -q '"code":"CUDA_ERROR_ILLEGAL_ADDRESS"' || {
    echo "the probe child seeing gpu3 and gpu2 did not fault" >&2
    exit 1
}
probe 0 "$u0" | grep -q 'gpu0 (GPU-[0-9a-f-]*) is not a GPU this child sees' || {
    echo "the probe child did not name the GPU it does not see" >&2
    exit 1
}
# If cuInit grew by 100 ms a visible GPU, only the parent's (8 GPUs, 0.6 s more) would grow.
growing=target/shim-matrix/growing-init.json
flat_init=target/shim-matrix/flat-init.json
echo '{"init_devices": 2, "init_per_device_us": 100000.0}' > "$growing"
echo '{"init_devices": 2, "init_per_device_us": 0.0}' > "$flat_init"
projected_check() {
    target/debug/peerpool sim --topology eight_gpu_nvswitch "$@" -- target/debug/peerpool check --quiet \
        --out target/shim-matrix/check-growing | sed -n 's/^timing: .*: \([0-9.]*\) s$/\1/p'
}
flat=$(projected_check --timing "$flat_init")
grown=$(projected_check --timing "$growing")
python3 -c 'import sys; f, g = map(float, sys.argv[1:]); sys.exit(0 if abs(g - f - 0.6) < 0.05 else f"{f} -> {g}: the probe children did not start seeing their pair only")' "$flat" "$grown"
echo "    the probe faults in a child seeing only its pair; a GPU it does not see is named; its cuInit is the pair's ($flat s -> $grown s)"
# The same for a suite's sandboxed trials (first_proof's ungranted reads, one child per pair).
projected_suite() {
    target/debug/peerpool sim --topology eight_gpu_nvswitch "$@" -- cargo test -q -p peerpool-tests --test first_proof 2>&1 |
        sed -n 's/^peerpool-fixtures: .*: \([0-9.]*\) s$/\1/p'
}
flat=$(projected_suite --timing "$flat_init")
grown=$(projected_suite --timing "$growing")
# The suite's two test threads take trials in no fixed order, so its projection varies by about
# a second from run to run; children seeing all 8 GPUs would add 0.6 s to each of ~28 waves.
python3 -c 'import sys; f, g = map(float, sys.argv[1:]); sys.exit(0 if g - f < 5 else f"{f} -> {g}: the suite children did not start seeing their pair only")' "$flat" "$grown"
echo "    a suite's sandboxed children see only their pair too ($flat s -> $grown s)"
echo "== CUDA_VISIBLE_DEVICES: the shim reads 19 forms as NVIDIA's driver did on one H200"
uuid=$(target/debug/peerpool sim --topology one_gpu -- env PEERPOOL_CHILD_ROLE=calibrate-child target/debug/peerpool -- uuids |
    python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["phases"]["uuids"][0])')
ci/visible-devices.sh target/debug/peerpool "$uuid" target/debug/peerpool sim --topology one_gpu -- \
    > target/shim-matrix/visible-devices.txt
diff target/shim-matrix/visible-devices.txt docs/hardware/2026-12-01-visible-devices/forms/visible-devices.txt || {
    echo "the shim reads CUDA_VISIBLE_DEVICES otherwise than NVIDIA's driver did (above: shim < > driver)" >&2
    exit 1
}
echo "    the same answers"
