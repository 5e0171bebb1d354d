#!/usr/bin/env python3
"""Copies the release test binaries of peerpool's first_proof and grant suites into DEST.

Reads `cargo test --message-format=json` from stdin (the artifacts it built). Used by
ci/gpu-bundle.sh (the bundle's suites/, which ci/gpu-calibrate.sh times as plain processes) and
ci/calibration-compare.sh (the same suites run through the libcuda shim).
Usage: cargo test --release -p peerpool-tests --test first_proof --test grant --no-run \\
           --message-format=json | ci/suite_binaries.py DEST
"""
import json
import shutil
import sys

SUITES = ("first_proof", "grant")

dest = sys.argv[1]
found = set()
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    target = message.get("target", {}).get("name")
    if message.get("reason") == "compiler-artifact" and message.get("executable") and target in SUITES:
        shutil.copy(message["executable"], f"{dest}/{target}")
        found.add(target)
missing = set(SUITES) - found
if missing:
    sys.exit(f"suite_binaries.py: not built: {', '.join(sorted(missing))}")
