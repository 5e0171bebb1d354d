#!/usr/bin/env python3
"""Writes host/src/driver/documented_calls.rs: every CUDA driver API call by the name CUDA
documents (`cuMemAlloc`, not the versioned symbol `cuMemAlloc_v2`), of every CUDA version
cudarc's bindings cover: the calls a fault rule may name. `--check` fails when the file is out of
date instead of writing it (`.ci/run` runs it).

Usage: python3 host/tools/documented_calls.py [--check]   (from anywhere; needs cargo)
"""

import json
import pathlib
import re
import subprocess
import sys

HOST = pathlib.Path(__file__).resolve().parent.parent
OUT = HOST / "src" / "driver" / "documented_calls.rs"

HEADER = """\
//! Every CUDA driver API call by the name CUDA documents (`cuMemAlloc`, not the versioned
//! symbol `cuMemAlloc_v2`), of every CUDA version cudarc's bindings cover: the calls a fault
//! rule may name.
//!
//! Written from cudarc's bindings by `host/tools/documented_calls.py`, which `.ci/run` runs with
//! `--check` to fail when this file is stale. Do not edit.

/// The names, sorted.
pub const DOCUMENTED_CALLS: &[&str] = &[
"""


def documented(symbol):
    """`cuMemAlloc` for `cuMemAlloc_v2`; other names as they are."""
    m = re.fullmatch(r"(.+)_v(\d+)", symbol)
    return m.group(1) if m else symbol


def main():
    meta = json.loads(subprocess.check_output(
        ["cargo", "metadata", "--format-version", "1", "--manifest-path", str(HOST / "Cargo.toml")]))
    manifest = next(p["manifest_path"] for p in meta["packages"] if p["name"] == "cudarc")
    bindings = (pathlib.Path(manifest).parent / "src" / "driver" / "sys" / "mod.rs").read_text()
    names = sorted({documented(n) for n in re.findall(r"^pub unsafe fn (cu\w+)\(", bindings, re.M)})
    if len(names) < 400:
        sys.exit(f"only {len(names)} calls found in cudarc's bindings")
    rendered = HEADER + "".join(f'    "{n}",\n' for n in names) + "];\n"
    if "--check" in sys.argv[1:]:
        if OUT.read_text() != rendered:
            sys.exit(f"{OUT} is out of date: run python3 host/tools/documented_calls.py")
        print(f"{OUT.name}: current ({len(names)} calls)")
        return
    OUT.write_text(rendered)
    print(f"wrote {OUT} ({len(names)} calls)")


if __name__ == "__main__":
    main()
