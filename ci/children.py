#!/usr/bin/env python3
"""Checks the rules of child processes and skips, over every Rust file git tracks.

1. No test function returns early on a role or privilege condition: a test that cannot do its
   work says so through the harness's skip, with the reason, and never passes. Test functions
   are those marked #[test] (or #[pair_test], #[machine_test], #[model_test]) and those a file
   hands to libtest-mimic (`Trial::test("name", f)`, or a `test("name", f)` helper). Flagged in
   their bodies: an `if`, `let ... else` or `match` whose condition reads the environment, a
   child role or the user's privileges (directly, or through a helper function of the same file
   that does) and whose branch returns anything but an error; and a "skipped" printed by hand.
2. Every child role (`Role::new("name", ...)`) is in ARCHITECTURE.md's table of roles, and the
   table names no other.
3. Outside the child facility (host/src/child/) at most three `current_exe()` calls remain,
   each under a comment that says why.

Prints what it found and exits 1 when any rule is broken. Usage: ci/children.py (from the
repository's root, or anywhere in it).
"""
import os
import re
import subprocess
import sys

# What a condition reads when it asks whether this process is a child, or may do privileged work.
CONDITION = re.compile(
    r"env::var|var_os\(|\bgeteuid\b|\bgetuid\b|\bis_root\b|\bcapget\b|\bCAP_[A-Z_]+|ROLE|\bCHILD\w*|"
    r"\bis_role\b|Call::current"
)
TEST_ATTRIBUTE = re.compile(r"#\[(test|pair_test|machine_test|model_test)\b[^\]]*\]")
FN = re.compile(r"\bfn\s+(\w+)")
HANDED_TO_HARNESS = re.compile(r"\b(?:Trial::test|test)\(\s*(?:\"[^\"]*\"|\w+)\s*,\s*(\w+)\s*\)")
SKIPPED_PRINT = re.compile(r"\b(?:e?print(?:ln)?!|write(?:ln)?!)\s*\([^;]*?\"[^\"]*\bskipped\b", re.IGNORECASE)
RETURN = re.compile(r"\breturn\b(?!\s+Err\b)")
EXIT = re.compile(r"\bexit\s*\(")


def blank(code):
    """The code with comments and the insides of string and char literals blanked, so that
    braces and words in them count for nothing; lengths and line breaks stay."""
    out = list(code)
    i, n = 0, len(code)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif code.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if code.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif code.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif c == "r" and re.match(r'r#*"', code[i:]) and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", code[i:]).group(1)
            start = i + 2 + len(hashes)
            end = code.find('"' + hashes, start)
            end = n if end < 0 else end
            wipe(start, end)
            i = end + 1 + len(hashes)
        elif c == '"':
            j = i + 1
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" else 1
            wipe(i + 1, j)
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", code[i:])
            if m:
                wipe(i + 1, i + m.end() - 1)
                i += m.end()
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


def matching(code, open_at):
    """The index just past the brace that closes the one at `open_at`."""
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(code)


def functions(code):
    """Each function's name, where `fn` is, and its body's span in the blanked code."""
    found = []
    for m in FN.finditer(code):
        brace, semi = code.find("{", m.end()), code.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue  # a declaration without a body
        found.append((m.group(1), m.start(), brace, matching(code, brace)))
    return found


def guards(body):
    """(condition, branch) of each `if`, `let ... else` and `match` in a blanked body."""
    for m in re.finditer(r"\bif\b|\bmatch\b", body):
        brace = body.find("{", m.end())
        if brace < 0:
            continue
        yield body[m.end():brace], body[brace:matching(body, brace)]
    for m in re.finditer(r"\blet\b", body):
        end = body.find(";", m.end())
        statement = body[m.end():end if end >= 0 else len(body)]
        e = re.search(r"\belse\s*\{", statement)
        if e:
            brace = m.end() + e.end() - 1
            yield statement[:e.start()], body[brace:matching(body, brace)]


def early_returns(path, text):
    """Each test function of `text` that returns early on a role or privilege condition."""
    code = blank(text)
    fns = functions(code)
    # Helpers of this file whose bodies read such a condition count as the condition itself.
    readers = {name for name, _, a, b in fns if CONDITION.search(code[a:b])}
    condition = re.compile(CONDITION.pattern + ("|\\b(" + "|".join(sorted(readers)) + r")\s*\(" if readers else ""))
    tests = set(HANDED_TO_HARNESS.findall(code))
    found = []
    for name, at, a, b in fns:
        attributes = code[max(0, code.rfind("}", 0, at), code.rfind(";", 0, at)):at]
        if name not in tests and not TEST_ATTRIBUTE.search(attributes):
            continue
        line = code.count("\n", 0, at) + 1
        if SKIPPED_PRINT.search(text[a:b]):
            found.append(f"{path}:{line}: {name} prints \"skipped\" itself instead of the harness's skip")
        body = code[a:b]
        for cond, branch in guards(body):
            if condition.search(cond) and (RETURN.search(branch) or EXIT.search(branch)):
                shown = " ".join(cond.split())
                found.append(f"{path}:{line}: {name} returns early when `{shown}`")
                break
        else:
            # A body that is one `if` on such a condition does nothing when it is false.
            whole = re.fullmatch(r"\{\s*if\b(.*?)(\{.*\})\s*\}", body, re.DOTALL)
            if whole and condition.search(whole.group(1)) and body[matching(body, body.index("{", 1)) :].strip() == "}":
                shown = " ".join(whole.group(1).split())
                found.append(f"{path}:{line}: {name} does its work only when `{shown}`")
    return found


SELF_TEST = {
    # Flagged: each is a test that passes without doing its work.
    "role.rs": ("#[test]\nfn role_x() {\n    if std::env::var(ROLE).is_ok_and(|r| r == \"x\") { return run(); }\n}\n", 1),
    "root.rs": ("#[test]\nfn needs_root() {\n    if !rustix::process::geteuid().is_root() {\n        return;\n    }\n}\n", 1),
    "print.rs": ("#[test]\nfn t() {\n    if no_driver() {\n        println!(\"skipped: no driver\");\n    }\n}\n", 1),
    "helper.rs": (
        "fn parent() -> Option<u8> {\n    if std::env::var_os(CHILD).is_some() { return None; }\n    Some(1)\n}\n"
        "#[test]\nfn t() {\n    let Some(p) = parent() else { return };\n}\n",
        1,
    ),
    "mimic.rs": (
        "fn t() -> Result<(), Failed> {\n    match std::env::var(ROLE).as_deref() {\n        Ok(\"a\") => return Ok(()),\n"
        "        _ => {}\n    }\n    Ok(())\n}\nfn main() { run(vec![Trial::test(\"t\", t)]); }\n",
        1,
    ),
    "only.rs": ("#[test]\nfn t() {\n    if is_role(\"hang\") {\n        sleep(60);\n    }\n}\nfn is_role(r: &str) -> bool { std::env::var(ROLE).is_ok() }\n", 1),
    "exit.rs": ("#[test]\nfn t() {\n    if is_role(\"x\") {\n        std::process::exit(0);\n    }\n    work();\n}\nfn is_role(r: &str) -> bool { std::env::var(ROLE).is_ok() }\n", 1),
    # Not flagged: a failure is no pass, a role dispatched in main is no test, and a string or a
    # comment that mentions a role is no condition.
    "fine.rs": (
        "#[test]\nfn t() -> Result<(), String> {\n    if std::env::var(ROLE).is_err() { return Err(\"unset\".into()); }\n"
        "    let s = \"if ROLE { return }\"; // if CHILD { return }\n    Ok(())\n}\n"
        "fn main() {\n    if std::env::var_os(ROLE_ENV).is_some() { return suite(); }\n}\n",
        0,
    ),
}


def self_test():
    for name, (text, expected) in SELF_TEST.items():
        found = early_returns(name, text)
        if len(found) != expected:
            sys.exit(f"ci/children.py: its own check is wrong on {name}: {found or 'nothing found'}")


def roles_in_code(files):
    """Each role's name, with the files that declare it (in code: a doc comment's example is
    none)."""
    roles = {}
    for path, text in files:
        code = blank(text)
        for m in re.finditer(r"Role::new\(\s*\"", code):
            name = re.match(r"([^\"]*)\"", text[m.end():])
            if name:
                roles.setdefault(name.group(1), []).append(path)
    return roles


def roles_in_table(architecture):
    """The roles in the first column of the table under "Every role, in one table"."""
    at = architecture.find("Every role, in one table")
    if at < 0:
        return None
    names = set()
    for line in architecture[at:].splitlines()[1:]:
        if not line.strip():
            if names:
                break
            continue
        cells = line.split("|")
        if len(cells) > 2 and not cells[1].strip().startswith(("role", "---")):
            names.update(re.findall(r"`([^`]+)`", cells[1]))
    return names


def current_exe_calls(files):
    """Calls outside the facility, each with whether a comment stands in the lines above it."""
    calls = []
    for path, text in files:
        if path.startswith("host/src/child/"):
            continue
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if "current_exe()" in line and not line.lstrip().startswith("//"):
                explained = any(l.lstrip().startswith("//") for l in lines[max(0, i - 3):i])
                calls.append((f"{path}:{i + 1}", explained))
    return calls


def main():
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True)
    os.chdir(root.stdout.strip())
    self_test()
    paths = subprocess.run(["git", "ls-files", "*.rs"], capture_output=True, text=True, check=True).stdout.split()
    files = [(p, open(p, encoding="utf-8").read()) for p in paths if os.path.exists(p)]
    problems = []

    early = [f for path, text in files for f in early_returns(path, text)]
    problems += early

    code_roles = roles_in_code(files)
    table = roles_in_table(open("ARCHITECTURE.md", encoding="utf-8").read())
    if table is None:
        problems.append("ARCHITECTURE.md: no table of roles (\"Every role, in one table\")")
    else:
        for name in sorted(set(code_roles) - table):
            problems.append(f"{code_roles[name][0]}: role {name} is not in ARCHITECTURE.md's table of roles")
        for name in sorted(table - set(code_roles)):
            problems.append(f"ARCHITECTURE.md: role {name} is in the table but no code declares it")

    calls = current_exe_calls(files)
    if len(calls) > 3:
        problems.append(f"{len(calls)} current_exe() calls outside host/src/child/ (3 at most): {[c for c, _ in calls]}")
    problems += [f"{where}: current_exe() without a comment that says why" for where, ok in calls if not ok]

    for problem in problems:
        print(problem)
    print(
        f"ci/children.py: {len(early)} test(s) that pass without their work on a role or privilege condition; "
        f"{len(code_roles)} child roles, {'all' if table is not None and table == set(code_roles) else 'not all'} "
        f"in ARCHITECTURE.md; {len(calls)} current_exe() call(s) outside host/src/child/"
    )
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
