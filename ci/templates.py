#!/usr/bin/env python3
"""The CI templates for downstream crates (templates/ci/) cannot rot: both parse as YAML, have
the shape the guide promises (a simulated topology matrix, GPUs required on the GPU job, nextest
partitions matching the number of jobs, JUnit kept), and their simulated job's own shell lines
run, as the CI service would run them, on a copy of the README's crate
(fixtures/examples/quickstart), once per topology of the matrix, each run's JUnit checked. Where
cargo-nextest is installed and no driver is, the GPU job's lines run too, and must fail as a
runner without its GPUs should: nextest's exit 104.

What is emulated, not run: checking out (your crate is the copy; peerpool is this checkout, a
link at ../peerpool), building peerpool (its command must be the README's; the build of this
checkout is used) and actions' `uses:` steps (nextest comes from PATH). The copy's
peerpool-fixtures patch names this checkout's fixtures, so the build is cargo's usual reuse.

The C++ template (cpp-github-actions.yml) is run the same way with --cpp, on a copy of
fixtures/examples/cpp-grants: its apt line is emulated too (the tools must be installed; ci/
cpp-example.sh installs them), its PyPI venv is kept from one run to the next, and CTest's JUnit must hold every test, passed.

Usage: ci/templates.py [--cpp]   (after `cargo build --release -p peerpool-cli -p peerpool-shim`,
and for --cpp with `-p peerpool-cudart12 -p peerpool-cudart13`; needs PyYAML)
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import yaml
except ImportError:
    sys.exit("ci/templates.py needs PyYAML (pip install pyyaml)")

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates/ci"
OUT = ROOT / "target/ci-templates"
RELEASE = ROOT / "target/release"
BUILD = "cargo build --release -p peerpool-cli -p peerpool-shim"
BUILD_CPP = BUILD + " -p peerpool-cudart12 -p peerpool-cudart13"
APT_CPP = "sudo apt-get install -y -q cmake ninja-build libgtest-dev"


def fail(message):
    sys.exit(f"ci/templates.py: {message}")


def check(ok, message):
    if not ok:
        fail(message)


def load(name):
    try:
        return yaml.safe_load((TEMPLATES / name).read_text())
    except yaml.YAMLError as e:
        fail(f"templates/ci/{name} is not valid YAML: {e}")


def catalog():
    """The built-in topologies and their GPU counts, as `peerpool topologies` lists them."""
    out = subprocess.run([RELEASE / "peerpool", "topologies"], capture_output=True, text=True, check=True).stdout
    found = {name: int(n) for name, n in re.findall(r"^(\w+) .*\((\d+) GPUs\)$", out, re.M)}
    check(found, "peerpool topologies listed no topology")
    return found


def make_crate(work):
    """A fresh copy of the README's crate at work/mine, with peerpool at work/peerpool."""
    shutil.rmtree(work, ignore_errors=True)
    mine = work / "mine"
    shutil.copytree(ROOT / "fixtures/examples/quickstart", mine)
    manifest = mine / "Cargo.toml"
    text = manifest.read_text()
    patched = text.replace('peerpool-fixtures = { path = "../.." }', f'peerpool-fixtures = {{ path = "{ROOT}/fixtures" }}')
    check(patched != text, "the quickstart crate's patch of peerpool-fixtures moved: update ci/templates.py")
    manifest.write_text(patched)
    (mine / ".config").mkdir()
    shutil.copy(ROOT / "fixtures/nextest.toml", mine / ".config/nextest.toml")
    (work / "peerpool").symlink_to(ROOT)
    return mine


def environment(extra):
    # Only the job's own settings: none of peerpool's from the environment CI runs in.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEERPOOL_")}
    # Shared with the rest of CI: the copies reuse the checkout's builds.
    env["CARGO_TARGET_DIR"] = str(ROOT / "target")
    env["CARGO_PROFILE_DEV_DEBUG"] = "line-tables-only"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(script, cwd, env, log):
    with open(log, "a") as out:
        out.write(f"$ {script}\n")
        out.flush()
        return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode


def expect(code, want, log, what):
    if code != want:
        sys.stderr.write(Path(log).read_text()[-6000:])
        fail(f"{what}: exit {code}, expected {want} (log: {log})")


def check_junit(path, topology, expected_pairs):
    check(path.exists(), f"{topology}: no {path}")
    text = path.read_text()
    tests = sum(int(n) for n in re.findall(r'<testsuite name="pairs" tests="(\d+)"', text))
    check(tests == expected_pairs, f"{path}: {tests} trials, expected {expected_pairs}")
    check("<failure" not in text and "<error" not in text, f"{path}: a trial failed")


# ---- GitHub Actions ----

def github_expand(text, values):
    def one(m):
        key = m.group(1).strip()
        check(key in values, f"github-actions.yml: {{{{ {key} }}}} is not one ci/templates.py knows")
        return str(values[key])

    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def github(topologies):
    doc = load("github-actions.yml")
    jobs = doc["jobs"]
    check(set(jobs) == {"simulated", "gpu"}, f"github-actions.yml: jobs {sorted(jobs)}")
    sim, gpu = jobs["simulated"], jobs["gpu"]
    matrix = sim["strategy"]["matrix"]["topology"]
    check(matrix and set(matrix) <= set(topologies), f"github-actions.yml: topologies {matrix} not all in the catalog")
    check(str(gpu["env"].get("PEERPOOL_REQUIRE_GPUS")) == "2", "github-actions.yml: the GPU job must require GPUs")
    partitions = gpu["strategy"]["matrix"]["partition"]
    runs = " ".join(s.get("run", "") for s in gpu["steps"])
    check(f"--partition count:${{{{ matrix.partition }}}}/{len(partitions)}" in runs and partitions == list(range(1, len(partitions) + 1)),
          "github-actions.yml: the GPU job's partitions must number its matrix")
    for name, job in jobs.items():
        uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
        check(uploads and all(s.get("if") == "always()" and "junit.xml" in str(s["with"]["path"]) for s in uploads),
              f"github-actions.yml: {name} must upload its JUnit always")

    def job_run(job, key, matrix_values, want, what):
        work = OUT / "github" / key
        mine = make_crate(work)
        values = {"github.workspace": work, **{f"matrix.{k}": v for k, v in matrix_values.items()}}
        env_path = work / "github_path"
        env_path.touch()
        base = {"GITHUB_WORKSPACE": work, "GITHUB_PATH": env_path}
        base.update({k: github_expand(str(v), values) for k, v in job.get("env", {}).items()})
        log = work / "steps.log"
        for step in job["steps"]:
            if "uses" in step:
                continue  # checkouts, nextest, uploads: emulated
            script = github_expand(step["run"], values)
            if script.strip() == BUILD:
                continue  # this checkout's build is used
            cwd = work / step.get("working-directory", ".")
            extra = dict(base)
            extra.update({k: github_expand(str(v), values) for k, v in step.get("env", {}).items()})
            added = [line for line in env_path.read_text().splitlines() if line]
            extra["PATH"] = ":".join(reversed(added)) + ":" + os.environ["PATH"] if added else os.environ["PATH"]
            code = run(script, cwd, environment(extra), log)
            if code != 0:
                expect(code, want, log, f"github-actions.yml {what}")
                return mine, work
        expect(0, want, log, f"github-actions.yml {what}")
        return mine, work

    build_steps = [s for s in sim["steps"] if s.get("run", "").strip() == BUILD]
    check(len(build_steps) == 1 and build_steps[0].get("working-directory") == "peerpool",
          "github-actions.yml: peerpool must be built in peerpool/ by the README's command")
    for topology, pairs in topologies_run(matrix, topologies):
        _, work = job_run(sim, topology, {"topology": topology}, 0, f"simulated on {topology}")
        check_junit(work / "junit.xml", topology, pairs)
        print(f"templates: github-actions.yml simulated job on {topology}: passed, JUnit written")
    if gpu_runnable():
        job_run(gpu, "gpu", {"partition": 1}, 104, "gpu job without GPUs")
        print("templates: github-actions.yml gpu job without GPUs: fails with nextest's 104")


# ---- GitLab CI ----

def gitlab(topologies):
    doc = load("gitlab-ci.yml")
    base, sim, gpu = doc[".peerpool"], doc["simulated"], doc["gpu"]
    check(sim["extends"] == ".peerpool" and gpu["extends"] == ".peerpool", "gitlab-ci.yml: both jobs extend .peerpool")
    matrix = sim["parallel"]["matrix"][0]["TOPOLOGY"]
    check(matrix and set(matrix) <= set(topologies), f"gitlab-ci.yml: topologies {matrix} not all in the catalog")
    check(str(gpu["variables"].get("PEERPOOL_REQUIRE_GPUS")) == "2", "gitlab-ci.yml: the GPU job must require GPUs")
    check(isinstance(gpu["parallel"], int) and "--partition \"count:$CI_NODE_INDEX/$CI_NODE_TOTAL\"" in " ".join(gpu["script"]),
          "gitlab-ci.yml: the GPU job's partitions must follow its parallel jobs")
    artifacts = base["artifacts"]
    check(artifacts["when"] == "always" and artifacts["reports"]["junit"] == "junit.xml", "gitlab-ci.yml: JUnit must be kept always")
    before = base["before_script"]
    check(len(before) == 3 and before[0].endswith('git clone --depth 1 "$PEERPOOL" ../peerpool')
          and before[1] == f"(cd ../peerpool && {BUILD})",
          "gitlab-ci.yml: before_script must clone peerpool to ../peerpool and build it by the README's command")

    def job_run(job, key, variables, want, what):
        work = OUT / "gitlab" / key
        mine = make_crate(work)
        extra = {"CI_PROJECT_DIR": mine}
        for name, value in {**doc["variables"], **job.get("variables", {}), **variables}.items():
            extra[name] = os.path.expandvars(str(value).replace("$CI_PROJECT_DIR", str(mine)))
        # One shell for before_script and script, as the runner does; the clone and build are
        # emulated (work/peerpool is this checkout).
        script = "\n".join(before[2:] + job["script"])
        log = work / "script.log"
        code = run(script, mine, environment(extra), log)
        expect(code, want, log, f"gitlab-ci.yml {what}")
        # after_script runs in a shell of its own; after a failed script there may be no report
        # to merge, which GitLab records without changing the job's status.
        if want == 0:
            after = run("\n".join(base["after_script"]), mine, environment(extra), log)
            expect(after, 0, log, f"gitlab-ci.yml {what}: after_script")
        return mine

    for topology, pairs in topologies_run(matrix, topologies):
        mine = job_run(sim, topology, {"TOPOLOGY": topology}, 0, f"simulated on {topology}")
        check_junit(mine / "junit.xml", topology, pairs)
        print(f"templates: gitlab-ci.yml simulated job on {topology}: passed, JUnit written")
    if gpu_runnable():
        job_run(gpu, "gpu", {"CI_NODE_INDEX": 1, "CI_NODE_TOTAL": gpu["parallel"]}, 104, "gpu job without GPUs")
        print("templates: gitlab-ci.yml gpu job without GPUs: fails with nextest's 104")


def topologies_run(matrix, topologies):
    """Each topology with its number of ordered pairs: one trial per pair."""
    for topology in matrix:
        n = topologies[topology]
        yield topology, n * (n - 1)


def gpu_runnable():
    have_nextest = subprocess.run(["cargo", "nextest", "--version"], capture_output=True).returncode == 0
    driver = subprocess.run([RELEASE / "peerpool", "facts"], capture_output=True).returncode == 0
    if not have_nextest or driver:
        why = "cargo-nextest is not installed" if not have_nextest else "a driver is here"
        print(f"templates: the GPU jobs were not run ({why})", file=sys.stderr)
        return False
    return True


# ---- The C++ suite on GitHub Actions ----

def cpp_github():
    doc = load("cpp-github-actions.yml")
    check(set(doc["jobs"]) == {"simulated"}, f"cpp-github-actions.yml: jobs {sorted(doc['jobs'])}")
    job = doc["jobs"]["simulated"]
    runs = [s.get("run", "").strip() for s in job["steps"]]
    check(BUILD_CPP in runs, f"cpp-github-actions.yml: peerpool must be built by `{BUILD_CPP}`")
    check(APT_CPP in runs, f"cpp-github-actions.yml: the tools must come from `{APT_CPP}`")
    uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    check(uploads and all(s.get("if") == "always()" and "junit.xml" in str(s["with"]["path"]) for s in uploads),
          "cpp-github-actions.yml: the job must upload its JUnit always")
    work = OUT / "cpp"
    shutil.rmtree(work, ignore_errors=True)
    mine = work / "mine"
    shutil.copytree(ROOT / "fixtures/examples/cpp-grants", mine)
    (work / "peerpool").symlink_to(ROOT)
    # Kept from one run to the next here: the PyPI step's venv is then installed already.
    runner_temp = OUT / "cpp-runner-temp"
    runner_temp.mkdir(exist_ok=True)
    files = {"GITHUB_PATH": work / "github_path", "GITHUB_ENV": work / "github_env"}
    for f in files.values():
        f.touch()
    log = work / "steps.log"
    for step in job["steps"]:
        if "uses" in step:
            continue  # checkouts and the upload: emulated
        script = github_expand(step["run"], {"github.workspace": work})
        if script.strip() == BUILD_CPP:
            continue  # this checkout's build is used
        if script.strip() == APT_CPP:
            for tool in ["cmake", "ninja"]:
                check(shutil.which(tool), f"{tool} is not installed: ci/cpp-example.sh installs the C++ tools")
            continue
        extra = {"GITHUB_WORKSPACE": work, "RUNNER_TEMP": runner_temp, **files}
        for line in files["GITHUB_ENV"].read_text().splitlines():
            name, _, value = line.partition("=")
            extra[name] = value
        added = [line for line in files["GITHUB_PATH"].read_text().splitlines() if line]
        extra["PATH"] = ":".join([*reversed(added), os.environ["PATH"]])
        code = run(script, work / step.get("working-directory", "."), environment(extra), log)
        expect(code, 0, log, f"cpp-github-actions.yml step {step.get('name', script.splitlines()[0])!r}")
    junit = mine / "build/junit.xml"
    check(junit.exists(), f"cpp-github-actions.yml: CTest wrote no {junit}")
    text = junit.read_text()
    tests = re.search(r'<testsuite [^>]*\btests="(\d+)"', text)
    listed = subprocess.run(["ctest", "--test-dir", mine / "build", "-N"], capture_output=True, text=True, check=True).stdout
    want = int(re.search(r"Total Tests: (\d+)", listed).group(1))
    check(tests and int(tests.group(1)) == want, f"{junit}: {tests and tests.group(1)} tests, expected {want}")
    check("<failure" not in text and "<skipped" not in text, f"{junit}: a test failed or was skipped")
    print(f"templates: cpp-github-actions.yml simulated job: {want} CTest tests passed, JUnit written")


def main():
    for name in ["peerpool", "libpeerpool_shim.so"]:
        check((RELEASE / name).exists(), f"build target/release/{name} first ({BUILD})")
    if sys.argv[1:] == ["--cpp"]:
        for name in ["libpeerpool_cudart12.so", "libpeerpool_cudart13.so"]:
            check((RELEASE / name).exists(), f"build target/release/{name} first ({BUILD_CPP})")
        OUT.mkdir(parents=True, exist_ok=True)
        cpp_github()
        return
    check(not sys.argv[1:], "usage: ci/templates.py [--cpp]")
    topologies = catalog()
    OUT.mkdir(parents=True, exist_ok=True)
    github(topologies)
    gitlab(topologies)
    print("templates: both parse, and their jobs run as written")


main()
