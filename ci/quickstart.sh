#!/usr/bin/env bash
# The README's three-command start as a new user meets it: fixtures/examples/quickstart is the
# Cargo.toml and test file of the README and of the guide's first-test chapter (checked to be
# the same, byte for byte, apart from the in-tree section that points at this checkout), and it
# must behave as they say: skipped with reasons and exit 0 on a CPU runner (cargo test, and
# nextest with --no-tests=pass), passing on a simulated topology through `peerpool sim` and by
# PEERPOOL_TOPOLOGY, failing with the documented codes when GPUs are required and absent, and
# JUnit listing every skip's reason.
# Usage: ci/quickstart.sh   (needs cargo-nextest; on a machine with GPUs only the first checks run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
crate=fixtures/examples/quickstart
out=target/quickstart
rm -rf "$out" && mkdir -p "$out" && chmod 700 "$out"

echo "== the README's and the guide's files are the crate's"
python3 - "$crate" <<'PY'
import re, sys
crate = sys.argv[1]
for doc in ["README.md", "docs/guide/src/first-test.md"]:
    text_of_doc = open(doc).read()
    for name in ["Cargo.toml", "tests/pairs.rs"]:
        m = re.search(r"<!-- quickstart: " + re.escape(name) + r" -->\n```\w+\n(.*?)```\n", text_of_doc, re.S)
        if not m:
            sys.exit(f"{doc} has no quickstart block for {name}")
        text = open(f"{crate}/{name}").read()
        if name == "Cargo.toml":
            text = text.split("\n# In peerpool's own tree only")[0].rstrip("\n") + "\n"
        if m.group(1) != text:
            sys.exit(f"{doc}'s {name} differs from {crate}/{name}")
PY
sed -n '/^\[test-groups\]/,$p' fixtures/nextest.toml > "$out/shipped.toml"
sed -n '/^\[test-groups\]/,$p' .config/nextest.toml | cmp -s - "$out/shipped.toml" || {
    echo ".config/nextest.toml does not end with fixtures/nextest.toml" >&2
    exit 1
}

export CARGO_TARGET_DIR="$root/target"
# The crate is a workspace of its own, so the workspace's line-tables-only profile does not
# reach it: full debug info for its second build of every dependency filled a CI machine's disk.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
unset PEERPOOL_TOPOLOGY PEERPOOL_HARDWARE PEERPOOL_SIM_TOPOLOGY PEERPOOL_REQUIRE_GPUS
run() { (cd "$crate" && "$@"); }
. ci/expect.sh
cargo build --release -q -p peerpool-cli -p peerpool-shim
run cargo build -q --tests
if target/release/peerpool facts >/dev/null 2>&1 || [ -e /dev/nvidia0 ]; then
    echo "a GPU or driver is here: the CPU-runner checks do not apply" >&2
    exit 0
fi

echo "== CPU runner: skipped with reasons, exit 0"
set +e
run cargo test > "$out/cargo-test.txt" 2>&1
expect 0 $? "$out/cargo-test.txt" "0 passed; 0 failed; 2 ignored" \
    "pairs::peer_writes_granted_pool::gpu0->gpu1: no CUDA driver"
PEERPOOL_REPORT_DIR="$root/$out/report" run cargo nextest run --no-tests=pass > "$out/nextest.txt" 2>&1
expect 0 $? "$out/nextest.txt" "0 tests run: 0 passed, 2 skipped"
target/release/peerpool report "$out/report" > "$out/report.txt" 2>&1
expect 3 $? "$out/report.txt" "0 passed, 0 failed, 2 skipped"
expect 3 3 "$out/report/junit.xml" '<testsuite name="pairs" tests="2" skipped="2"' \
    '<testcase name="pairs::peer_writes_granted_pool::gpu1-&gt;gpu0" classname="pairs">' \
    '<skipped message="no CUDA driver"/>'
[ "$(grep -c '<skipped message="no CUDA driver"/>' "$out/report/junit.xml")" = 2 ] || {
    echo "the JUnit must list both skipped trials with their reason" >&2
    exit 1
}

echo "== a copy of the test binary anywhere records its run in its cargo target directory"
suite=$(run cargo test --no-run 2>&1 | sed -n 's/.*Executable tests\/pairs.rs (\(.*\))$/\1/p')
anywhere="$root/$out/anywhere"
mkdir -p "$anywhere/bin" "$anywhere/named"
cp "$suite" "$anywhere/bin/pairs"
cp target/CACHEDIR.TAG "$anywhere/"   # cargo's own tag, as in every target directory it makes
env -u CARGO_TARGET_DIR -u PEERPOOL_REPORT_DIR "$anywhere/bin/pairs" > "$out/anywhere.txt" 2>&1
expect 0 $? "$out/anywhere.txt" "0 passed; 0 failed; 2 ignored"
[ -f "$anywhere/peerpool-report/pairs.plan.json" ] || { echo "no plan in $anywhere/peerpool-report" >&2; exit 1; }
CARGO_TARGET_DIR="$anywhere/named" env -u PEERPOOL_REPORT_DIR "$anywhere/bin/pairs" > "$out/anywhere-named.txt" 2>&1
expect 0 $? "$out/anywhere-named.txt" "0 passed; 0 failed; 2 ignored"
[ -f "$anywhere/named/peerpool-report/pairs.plan.json" ] || { echo "CARGO_TARGET_DIR was not followed" >&2; exit 1; }

echo "== a simulated topology through the libcuda shim, as the README runs it"
run "$root/target/release/peerpool" sim --topology four_gpu_islands -- cargo test > "$out/shim.txt" 2>&1
expect 0 $? "$out/shim.txt" "4 passed; 0 failed; 8 ignored"

echo "== a simulated topology by PEERPOOL_TOPOLOGY: every trial runs and passes"
PEERPOOL_TOPOLOGY=two_h200_nvlink run cargo test > "$out/simulated.txt" 2>&1
expect 0 $? "$out/simulated.txt" "2 passed; 0 failed; 0 ignored"
PEERPOOL_TOPOLOGY=four_gpu_islands run cargo nextest run > "$out/simulated-nextest.txt" 2>&1
expect 0 $? "$out/simulated-nextest.txt" "4 passed, 8 skipped"

echo "== GPUs required and absent: the binary and cargo test exit 69, nextest 104"
PEERPOOL_REQUIRE_GPUS=2 run cargo test > "$out/required.txt" 2>&1
expect 69 $? "$out/required.txt" "(exit status: 69)" "GPUs required: PEERPOOL_REQUIRE_GPUS=2, but no CUDA driver here"
PEERPOOL_REQUIRE_GPUS=2 run cargo nextest run --no-tests=pass > "$out/required-nextest.txt" 2>&1
expect 104 $? "$out/required-nextest.txt" "exited with exit code 69" "GPUs required"
PEERPOOL_REQUIRE_GPUS=1 PEERPOOL_TOPOLOGY=two_h200_nvlink run cargo test > "$out/required-sim.txt" 2>&1
expect 69 $? "$out/required-sim.txt" "(exit status: 69)" "asks for the simulated topology"
PEERPOOL_REQUIRE_GPUS=2 run "$root/target/release/peerpool" sim -- cargo test > "$out/required-shim.txt" 2>&1
expect 69 $? "$out/required-shim.txt" "(exit status: 69)" "simulated by peerpool's libcuda shim"
set -e
echo "quickstart: as the README says"
