"""What the project's generators share (ci/coverage.py, host/tools/documented_calls.py,
host/shim/tools/unsupported.py): a symbol's documented name, cudarc's bindings, and how a run
ends: the files written or, with `--check` (as `.ci/run` runs them), a failure when one is stale.
"""

import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def documented(symbol):
    """`cuMemAlloc` for `cuMemAlloc_v2`; other names as they are."""
    m = re.fullmatch(r"(.+)_v(\d+)", symbol)
    return m.group(1) if m else symbol


def cudarc_bindings(manifest):
    """cudarc's driver bindings (`src/driver/sys/mod.rs`), of the cudarc the package at
    `manifest` builds."""
    meta = json.loads(subprocess.check_output(
        ["cargo", "metadata", "--format-version", "1", "--manifest-path", str(manifest)]))
    cudarc = next(p["manifest_path"] for p in meta["packages"] if p["name"] == "cudarc")
    return pathlib.Path(cudarc).parent / "src" / "driver" / "sys" / "mod.rs"


def write_or_check(files, summary):
    """Writes each `(path, text)` of `files`, then says `wrote <summary>`; with `--check`, writes
    nothing: `<summary>: current`, or a failure naming the stale files and this script."""
    if "--check" in sys.argv[1:]:
        stale = [path.name for path, text in files if not path.exists() or path.read_text() != text]
        if stale:
            script = pathlib.Path(sys.argv[0]).resolve().relative_to(ROOT)
            sys.exit(f"{', '.join(stale)} out of date: run python3 {script}")
        print(f"{summary}: current")
        return
    for path, text in files:
        path.write_text(text)
    print(f"wrote {summary}")
