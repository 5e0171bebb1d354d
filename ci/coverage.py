#!/usr/bin/env python3
"""Writes docs/coverage.md: for each program recorded against NVIDIA's driver on the H200s (the
shim's clients and cuda.core scripts, the CUDA-runtime programs and PyTorch, traced through the
pass-through: docs/hardware/*/through/*.calls.txt and docs/hardware/*/runtime/*.calls.txt, the
latest run of each), the entry points it called and whether the simulator serves each one. An
entry point is served when the shim implements it (host/shim/src, less the generated stubs),
except cuGetExportTable, which the simulator refuses by design. `--check` fails when the file is
out of date (`.ci/run` runs it).

Usage: python3 ci/coverage.py [--check]
"""

import pathlib
import re

from generated import documented, write_or_check

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHIM = ROOT / "host" / "shim" / "src"
OUT = ROOT / "docs" / "coverage.md"
GENERATED = {"unsupported.rs", "per_thread.rs"}
REFUSED = {"cuGetExportTable": "the CUDA runtime's private tables: refused, as only NVIDIA's driver can answer them"}


def served():
    names = set()
    for path in SHIM.rglob("*.rs"):
        if path.name not in GENERATED:
            names.update(documented(n) for n in re.findall(r"\bfn (cu[A-Za-z0-9_]+)\s*\(", path.read_text()))
    return names - set(REFUSED)


def records():
    """The latest record of each program: {program: (run, {entry point: calls})}."""
    latest = {}
    for path in sorted(ROOT.glob("docs/hardware/*/through/*.calls.txt")) + sorted(
            ROOT.glob("docs/hardware/*/runtime/*.calls.txt")):
        program, run = path.name[: -len(".calls.txt")], path.parent.parent.name
        calls = {}
        for line in path.read_text().splitlines():
            count, name = line.split()
            if name.startswith("cu"):
                calls[documented(name)] = calls.get(documented(name), 0) + int(count)
        # A full trace starts with cuInit; lists filtered to some calls are not coverage.
        if "cuInit" in calls and (program not in latest or run >= latest[program][0]):
            latest[program] = (run, calls)
    return latest


def main():
    serves = served()
    rows, missing = [], {}
    for program, (run, calls) in sorted(records().items()):
        names = sorted(calls)
        ok = [n for n in names if n in serves]
        rows.append(f"| `{program}` | [`{run}`](hardware/{run}/RUN.md) | {len(names)} | {len(ok)} | "
                    f"{100 * len(ok) // max(len(names), 1)}% |")
        for n in names:
            if n not in serves:
                missing.setdefault(n, []).append(program)
    text = [
        "# What the simulator serves of what real programs call",
        "",
        "Each program below ran against NVIDIA's driver on the H200s through the pass-through,",
        "which traced every entry point it called. The simulator serves an entry point when the",
        "libcuda shim implements it; the rest answer `CUDA_ERROR_NOT_SUPPORTED` and name",
        "themselves. A served `cuLaunchKernel` runs peerpool's kernels natively and any other kernel",
        "from its PTX (a kernel whose image holds machine code only is refused by name). Written by",
        "`ci/coverage.py` from the recorded traces; `.ci/run` checks it is current.",
        "",
        "| program | recorded in | entry points called | served | |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]
    if missing:
        text += ["Not served:", "", "| entry point | called by | why |", "| --- | --- | --- |"]
        for name, programs in sorted(missing.items()):
            why = REFUSED.get(name, "not simulated yet")
            text.append(f"| `{name}` | {', '.join(f'`{p}`' for p in programs)} | {why} |")
        text.append("")
    write_or_check([(OUT, "\n".join(text))], OUT.name)


if __name__ == "__main__":
    main()
