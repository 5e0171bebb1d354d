#!/usr/bin/env python3
"""Every run record cited in the tracked files (a `docs/hardware/...` or `docs/simulated/...`
path, in code, docs or scripts) exists. Prints each one that does not, with where it is cited,
and exits 1; exits 0 when all exist. Usage: ci/cited-records.py"""
import re
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
CITED = re.compile(r"docs/(?:hardware|simulated|cpu|bench)/[A-Za-z0-9_.\-/*]*[A-Za-z0-9_\-*]")
files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout.split(b"\0")
missing = []
for name in filter(None, files):
    path = root / name.decode()
    if not path.is_file():
        continue
    try:
        text = path.read_text()
    except (UnicodeDecodeError, OSError):
        continue
    for n, line in enumerate(text.splitlines(), 1):
        for cited in CITED.findall(line):
            # A glob or a placeholder names no one record.
            if any(c in cited for c in "*<{") or "/..." in cited:
                continue
            if not (root / cited).exists():
                missing.append(f"{name.decode()}:{n}: {cited}")
for m in missing:
    print(f"no such record: {m}")
sys.exit(1 if missing else 0)
