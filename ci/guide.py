#!/usr/bin/env python3
"""Checks the user guide (docs/guide) and the README, offline.

- Every relative link of README.md and of the guide's chapters names a file or directory of
  the repository, and every `#anchor` a heading of the markdown it points at.
- With the built book (`mdbook build docs/guide`, given as the first argument), every anchor
  a chapter links to within the book is an id mdbook gave a heading.
- SUMMARY.md lists every chapter, and tests/guide.rs includes every chapter (its ```rust blocks
  are doctests); a code block in a chapter names its language, since rustdoc compiles a block
  without one as Rust.
- environment.md's table names every PEERPOOL_* variable the repository uses, and no other.
- Product text names no issue numbers.

Usage: ci/guide.py [BUILT_BOOK_DIR]
"""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs/guide/src"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(.*)$")
problems = []


def slug(heading):
    """The id mdbook (and GitHub) give a heading: lower case, spaces to `-`, other marks dropped."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return "".join("-" if c.isspace() else c for c in text if c.isalnum() or c in "-_" or c.isspace())


def headings(path):
    """The anchors of a markdown file, duplicates numbered as mdbook numbers them."""
    seen, ids, fenced = {}, set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"#{1,6}\s+(.*)", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else f"{base}-{n}")
    return ids


def outside_code(text):
    """The text with fenced blocks and inline code blanked, so their brackets are not links."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def check_links(doc):
    for target in LINK.findall(outside_code(doc.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # no network here: external links are not followed
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        name = f"{doc.relative_to(ROOT)}: {target}"
        if not dest.exists():
            problems.append(f"{name}: no such file")
        elif ROOT not in dest.parents and dest != ROOT:
            problems.append(f"{name}: outside the repository")
        elif anchor and dest.suffix == ".md" and anchor not in headings(dest):
            problems.append(f"{name}: no heading with that anchor")


def check_built(book):
    """Anchors within the book against the ids mdbook wrote."""
    for doc in GUIDE.glob("*.md"):
        for target in LINK.findall(outside_code(doc.read_text())):
            path, _, anchor = target.partition("#")
            if not anchor or re.match(r"[a-z]+:", target) or (path and "/" in path):
                continue
            page = Path(book) / ((path or doc.name).removesuffix(".md") + ".html")
            if not page.exists():
                problems.append(f"{doc.name}: {target}: {page} was not built")
            elif f'id="{anchor}"' not in page.read_text():
                problems.append(f"{doc.name}: {target}: mdbook made no such id")


def check_chapters():
    chapters = sorted(p.name for p in GUIDE.glob("*.md") if p.name != "SUMMARY.md")
    summary = (GUIDE / "SUMMARY.md").read_text()
    included = (ROOT / "tests/guide.rs").read_text()
    for name in chapters:
        if f"({name})" not in summary:
            problems.append(f"SUMMARY.md does not list {name}")
        if f'include_str!("../docs/guide/src/{name}")' not in included:
            problems.append(f"tests/guide.rs does not include {name}: its Rust examples go untested")
        fenced = False
        for number, line in enumerate((GUIDE / name).read_text().splitlines(), 1):
            m = FENCE.match(line)
            if m:
                if not fenced and not m.group(1).strip():
                    problems.append(f"{name}:{number}: a code block without a language is compiled as Rust")
                fenced = not fenced


def check_variables():
    used = subprocess.run(
        ["git", "grep", "-hoI", r"PEERPOOL_[A-Z0-9_]*[A-Z0-9]", "--", ":!docs/guide"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    rows = set(re.findall(r"^\| `(PEERPOOL_[A-Z0-9_]+)` \|", (GUIDE / "environment.md").read_text(), re.M))
    for name in sorted(set(used) - rows):
        problems.append(f"environment.md's table does not describe {name}")
    for name in sorted(rows - set(used)):
        problems.append(f"environment.md's table describes {name}, which nothing uses")


def check_product_text():
    for doc in [ROOT / "README.md", *GUIDE.glob("*.md")]:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            if re.search(r"\bissues? #?\d+", line, re.I):
                problems.append(f"{doc.relative_to(ROOT)}:{number}: names an issue number")


for doc in [ROOT / "README.md", *sorted(GUIDE.glob("*.md"))]:
    check_links(doc)
if len(sys.argv) > 1:
    check_built(sys.argv[1])
check_chapters()
check_variables()
check_product_text()
for p in problems:
    print(f"guide: {p}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"guide: links, chapters, variables and examples' coverage checked ({os.path.relpath(GUIDE, ROOT)})")
