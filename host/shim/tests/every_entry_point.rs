//! Every entry point CUDA's headers declare is exported and answers: for each header set (CUDA
//! 13.0 and 12.9, `$PEERPOOL_CUDA_HEADERS`, include directories separated by `:`), a C program
//! naming every entry point the headers declare (with and without the per-thread default
//! stream) is built against the shim, loads with every symbol bound at start, and calls each one
//! with zero arguments after `cuInit`: each must return a result code, none may crash the
//! program. Where the header sets select different versions of one entry point
//! (`cuCtxCreate_v2` and `_v4`), each is served where the other is. Without the headers the
//! trials are skipped with the reason.

mod support;

use libtest_mimic::{Arguments, Failed, Trial};
use std::collections::BTreeSet;
use std::process::{Command, ExitCode};
use support::{run, shim_dir, stdout};

const HEADERS: &str = "PEERPOOL_CUDA_HEADERS";

/// `source` through the C preprocessor with the headers in `include` and `flags`.
fn preprocess(include: &str, flags: &[&str], source: &str) -> Result<String, Failed> {
    let out = Command::new("cc")
        .args(["-E", "-x", "c"])
        .args(flags)
        .arg(format!("-I{include}"))
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().expect("piped").write_all(source.as_bytes())?;
            child.wait_with_output()
        })?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The entry points a program compiled against the headers in `include` can name.
fn declared(include: &str) -> Result<BTreeSet<String>, Failed> {
    let mut names = BTreeSet::new();
    for defines in [&[][..], &["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"][..]] {
        let text = preprocess(include, defines, "#include <cuda.h>\n")?;
        for line in text.lines().filter(|l| l.contains("CUresult")) {
            let after = line.split("CUresult").nth(1).unwrap_or_default();
            let name: String = after
                .trim_start()
                .trim_start_matches("__attribute__((visibility(\"default\")))")
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.starts_with("cu") && after.contains(&format!("{name}(")) {
                names.insert(name);
            }
        }
    }
    match names.len() {
        0..100 => Err(format!("only {} entry points found in {include}/cuda.h", names.len()).into()),
        _ => Ok(names),
    }
}

/// A C program that calls `cuInit`, then every one of `names` with twelve zero arguments (a
/// callee ignores those it does not take), and prints how many answered.
fn program(names: &BTreeSet<String>) -> String {
    let mut c = String::from(
        "#include <stdio.h>\ntypedef int (*any)(long, long, long, long, long, long, long, long, long, long, long, long);\n",
    );
    for name in names {
        c.push_str(&format!("extern int {name}();\n"));
    }
    c.push_str("int main(void) {\n    setvbuf(stdout, NULL, _IONBF, 0);\n    int init = cuInit(0), answered = 0;\n");
    for name in names.iter().filter(|n| *n != "cuInit") {
        c.push_str(&format!(
            "    printf(\"%s\\n\", \"{name}\");\n    ((any){name})(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);\n    answered++;\n"
        ));
    }
    c.push_str("    printf(\"init %d answered %d\\n\", init, answered);\n    return 0;\n}\n");
    c
}

fn every_entry_point_answers(include: String) -> Result<(), Failed> {
    let names = declared(&include)?;
    let dir = shim_dir()?;
    let stem = format!("every_entry_point_{}", names.len());
    let (source, exe) = (dir.join(format!("{stem}.c")), dir.join(&stem));
    std::fs::write(&source, program(&names))?;
    let built = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=gnu17", "-Wno-deprecated-non-prototype", "-o"])
        .arg(&exe)
        .arg(&source)
        .arg(format!("-L{}", dir.display()))
        .args(["-lcuda", "-Wl,-z,now"])
        .output()?;
    if !built.status.success() {
        return Err(format!("cc: {}", String::from_utf8_lossy(&built.stderr)).into());
    }
    let out = run(&mut Command::new(&exe), &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink")])?;
    let text = stdout(&out);
    let want = format!("init 0 answered {}", names.len() - 1);
    match (out.status.success(), text.lines().last()) {
        (true, Some(last)) if last == want => Ok(()),
        _ => {
            let last_called = text.lines().rfind(|l| l.starts_with("cu")).unwrap_or("none");
            Err(format!(
                "{}: the last entry point called was {last_called}; {}",
                out.status,
                text.lines().last().unwrap_or("")
            )
            .into())
        }
    }
}

/// The entry points the shim answers `CUDA_ERROR_NOT_SUPPORTED` (`src/unsupported.rs`, found at
/// run time).
fn stubs() -> Result<BTreeSet<String>, Failed> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR is not set")?;
    let text = std::fs::read_to_string(std::path::Path::new(&manifest).join("src/unsupported.rs"))?;
    let names = text.lines().filter_map(|l| l.trim().strip_prefix("fn ")?.split('(').next().map(str::to_owned));
    Ok(names.collect())
}

/// `cuCtxCreate` for `cuCtxCreate_v2`: the name CUDA documents.
fn base(name: &str) -> &str {
    match name.rsplit_once("_v") {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

/// What each of `names` is in a program compiled against the headers in `include`: the symbol
/// its macro selects (`cuCtxCreate` is `cuCtxCreate_v2` under CUDA 12.x's headers).
fn selected(include: &str, names: &BTreeSet<&str>) -> Result<Vec<(String, String)>, Failed> {
    let mut source = String::from("#include <cuda.h>\n");
    for name in names {
        source += &format!("@selects \"{name}\" {name}\n");
    }
    let text = preprocess(include, &["-P"], &source)?;
    let pairs = text.lines().filter_map(|l| {
        let mut words = l.strip_prefix("@selects ")?.split_whitespace();
        Some((words.next()?.trim_matches('"').to_owned(), words.next()?.to_owned()))
    });
    Ok(pairs.collect())
}

/// Where the header sets select different versions of an entry point (CUDA 12.x's
/// `cuCtxCreate` is `cuCtxCreate_v2`, 13.0's `_v4`), each is served where the other is: a
/// program built against either header set gets the same driver.
fn every_header_selects_a_served_version(dirs: Vec<String>) -> Result<(), Failed> {
    let stubs = stubs()?;
    let sets = dirs.iter().map(|d| declared(d)).collect::<Result<Vec<_>, _>>()?;
    let names: BTreeSet<&str> = sets.iter().flatten().map(|n| base(n)).collect();
    let picks = dirs.iter().map(|d| selected(d, &names)).collect::<Result<Vec<_>, _>>()?;
    let (mut wrong, mut differ) = (Vec::new(), 0);
    for (name, first) in &picks[0] {
        for (other, dir) in picks.iter().zip(&dirs).skip(1) {
            let Some((_, second)) = other.iter().find(|(n, _)| n == name).filter(|(_, s)| s != first) else { continue };
            differ += 1;
            if stubs.contains(first) != stubs.contains(second) {
                wrong.push(format!("{name}: {first} ({}) and {second} ({dir}) are not both served", dirs[0]));
            }
        }
    }
    match (wrong.is_empty(), differ) {
        (_, 0) => Err("the header sets select the same version of every entry point: are both given?".into()),
        (true, _) => Ok(()),
        (false, _) => Err(wrong.join("\n").into()),
    }
}

/// Each attribute that promises calls (`peerpool_sim::attributes::PROMISES`) answers 0 through
/// the simulator while none of them is served, and names only entry points that exist.
fn attributes_promise_only_what_is_served() -> Result<(), Failed> {
    let stubs = stubs()?;
    let sim = peerpool_sim::SimDriver::new(peerpool_sim::Topology::two_h200());
    let mut wrong = Vec::new();
    for (attribute, calls) in peerpool_sim::attributes::PROMISES {
        let served: Vec<&&str> = calls.iter().filter(|c| !stubs.contains(**c)).collect();
        if !served.is_empty() {
            wrong.push(format!(
                "attribute {attribute} promises {served:?}, which are served: it should answer as a GPU"
            ));
        }
        let value = sim.device_get_attribute_raw(0, attribute).map_err(|e| e.to_string())?;
        if value != 0 {
            wrong.push(format!("attribute {attribute} answers {value}, promising calls that are not served"));
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("\n").into()),
    }
}

fn main() -> ExitCode {
    let trials = match std::env::var(HEADERS) {
        Ok(dirs) => dirs
            .split(':')
            .filter(|d| !d.is_empty())
            .map(|include| {
                let name = format!(
                    "every_entry_point_answers::{}",
                    include.rsplit("site-packages/").next().unwrap_or(include).replace('/', "_")
                );
                let include = include.to_string();
                Trial::test(name, move || every_entry_point_answers(include))
            })
            .chain(std::iter::once({
                let dirs: Vec<String> = dirs.split(':').filter(|d| !d.is_empty()).map(str::to_owned).collect();
                Trial::test("every_header_selects_a_served_version", move || {
                    every_header_selects_a_served_version(dirs)
                })
            }))
            .collect(),
        Err(_) => {
            eprintln!("skipped: every_entry_point_answers: {HEADERS} is not set");
            vec![Trial::test("every_entry_point_answers", || Ok(())).with_ignored_flag(true)]
        }
    };
    let mut trials = trials;
    trials.push(Trial::test("attributes_promise_only_what_is_served", attributes_promise_only_what_is_served));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    support::clean_up();
    conclusion.exit_code()
}
