#!/usr/bin/env python3
"""Writes host/src/driver/documented_calls.rs: every CUDA driver API call by the name CUDA
documents (`cuMemAlloc`, not the versioned symbol `cuMemAlloc_v2`), of every CUDA version
cudarc's bindings cover: the calls a fault rule may name. `--check` fails when the file is out of
date instead of writing it (`.ci/run` runs it).

Usage: python3 host/tools/documented_calls.py [--check]   (from anywhere; needs cargo)
"""

import pathlib
import re
import sys

HOST = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HOST.parent / "ci"))
from generated import cudarc_bindings, documented, write_or_check  # noqa: E402
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


def main():
    bindings = cudarc_bindings(HOST / "Cargo.toml").read_text()
    names = sorted({documented(n) for n in re.findall(r"^pub unsafe fn (cu\w+)\(", bindings, re.M)})
    if len(names) < 400:
        sys.exit(f"only {len(names)} calls found in cudarc's bindings")
    rendered = HEADER + "".join(f'    "{n}",\n' for n in names) + "];\n"
    write_or_check([(OUT, rendered)], f"{OUT.name} ({len(names)} calls)")


if __name__ == "__main__":
    main()
