//! Programs on the CUDA runtime, on peerpool's runtime (`libcudart.so.12`/`.13` of
//! `host/cudart`) over the shim: an nvcc-built pool allocator with kernels
//! (`host/cudart/tests/programs/pool_peers.cu`) gives on each topology the output its one-GPU
//! part gave on an H200 with NVIDIA's runtime, and its two-GPU part the output checked here; a
//! CUDA 12 host program (`host12.cpp`) likewise; a fault rule on a driver call reaches the
//! program as the runtime error NVIDIA's runtime gives; a program carrying NVIDIA's runtime
//! statically is refused by `peerpool sim` with its exit code; both libraries export what
//! NVIDIA's export, under their version nodes.
//!
//! nvcc and CUDA 13's headers come from `$PEERPOOL_NVCC`/`$PEERPOOL_CUDA_INCLUDE`, CUDA 12.9's
//! headers and runtime from `$PEERPOOL_CUDA12` (`ci/cuda12-wheels.sh`), NVIDIA's newest 13.x
//! runtime beside `$PEERPOOL_NVCC_NEWEST`. Without them those trials are skipped, with the reason.

mod support;

use libtest_mimic::{Arguments, Failed};
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Mutex, OnceLock};
use support::{CUDA_INCLUDE, NVCC, NVCC_NEWEST, build_dir, run, shim_dir, stderr, stdout, trial, trial_needing};

const TOPOLOGIES: [&str; 3] = ["two_h200_nvlink", "four_gpu_islands", "eight_gpu_nvswitch"];
/// CUDA 12.9's runtime and headers from PyPI: the folder holding `cuda_runtime/` and `cuda_nvcc/`.
const CUDA12: &str = "PEERPOOL_CUDA12";

fn programs() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("../cudart/tests/programs")
}

fn expected(name: &str) -> Result<String, Failed> {
    let path = programs().join(name);
    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// A folder with peerpool's runtime of `major` as `libcudart.so.<major>`, made once per run.
fn runtime_dir(major: u32) -> Result<PathBuf, Failed> {
    static MADE: [OnceLock<Result<PathBuf, String>>; 2] = [OnceLock::new(), OnceLock::new()];
    let made = MADE[usize::from(major == 13)].get_or_init(|| {
        let library = build_dir().join(format!("libpeerpool_cudart{major}.so"));
        if !library.is_file() {
            return Err(format!("no {} (cargo build -p peerpool-cudart{major})", library.display()));
        }
        let dir = shim_dir().map_err(|e| e.message().unwrap_or_default().to_string())?.join(format!("cudart{major}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let link = dir.join(format!("libcudart.so.{major}"));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&library, &link).map_err(|e| e.to_string())?;
        Ok(dir)
    });
    made.clone().map_err(Failed::from)
}

/// Runs `program` on peerpool's runtime of `major` over the shim, as `peerpool sim` would.
fn on_runtime(
    major: u32,
    program: &Path,
    args: &[&str],
    settings: &[(&str, &str)],
) -> Result<std::process::Output, Failed> {
    let dir = runtime_dir(major)?;
    let preload = dir.join(format!("libcudart.so.{major}")).display().to_string();
    let mut all = vec![("LD_PRELOAD", preload.as_str())];
    all.extend_from_slice(settings);
    let mut command = Command::new(program);
    command.args(args);
    run(&mut command, &all)
}

/// `sources` (of `programs/`) built by nvcc into `exe` with `flags` and the runtime shared
/// (unless a flag says otherwise), code for sm_80 and sm_90 with their PTX; once a run.
fn nvcc_built(
    exe: &'static str,
    sources: &'static [&'static str],
    flags: &'static [&'static str],
) -> Result<PathBuf, Failed> {
    static BUILT: Mutex<Option<HashMap<&'static str, Result<PathBuf, String>>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let made = built.get_or_insert_with(HashMap::new).entry(exe).or_insert_with(|| {
        let nvcc = std::env::var(NVCC).map_err(|_| format!("{NVCC} is not set"))?;
        let include = PathBuf::from(std::env::var(CUDA_INCLUDE).map_err(|_| format!("{CUDA_INCLUDE} is not set"))?);
        let lib = include.join("../lib");
        let dir = shim_dir().map_err(|e| e.message().unwrap_or_default().to_string())?;
        // nvcc links `-lcudart`: a link named so, to the wheel's library, in a folder of ours.
        let link_dir = dir.join("link13");
        std::fs::create_dir_all(&link_dir).map_err(|e| e.to_string())?;
        let link = link_dir.join("libcudart.so");
        if !link.exists() {
            std::os::unix::fs::symlink(lib.join("libcudart.so.13"), &link).map_err(|e| e.to_string())?;
        }
        let out_path = dir.join(exe);
        let bin = Path::new(&nvcc).parent().map(Path::to_path_buf).unwrap_or_default();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let shared: &[&str] = if flags.contains(&"static") { &[] } else { &["-cudart", "shared"] };
        let out = Command::new(&nvcc)
            .env("PATH", path)
            .args(shared)
            .args(flags.iter().filter(|f| **f != "static"))
            .args(["-gencode", "arch=compute_80,code=[sm_80,compute_80]"])
            .args(["-gencode", "arch=compute_90,code=[sm_90,compute_90]"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-L{}", link_dir.display()))
            .arg(format!("-L{}", lib.display()))
            .arg(format!("-L{}", dir.display()))
            .args(sources.iter().map(|s| programs().join(s)))
            .arg("-o")
            .arg(&out_path)
            .output()
            .map_err(|e| format!("running nvcc: {e}"))?;
        match out.status.success() {
            true => Ok(out_path),
            false => Err(format!("nvcc failed: {}", String::from_utf8_lossy(&out.stderr))),
        }
    });
    made.clone().map_err(Failed::from)
}

/// `pool_peers.cu`, its runtime shared, or (`static_runtime`) linked statically, nvcc's default.
fn pool_peers(static_runtime: bool) -> Result<PathBuf, Failed> {
    match static_runtime {
        true => nvcc_built("pool_peers_static", &["pool_peers.cu"], &["static"]),
        false => nvcc_built("pool_peers", &["pool_peers.cu"], &[]),
    }
}

/// Relocatable device code over two translation units: linked by the driver's linker at load.
fn relocatable_device_code_runs() -> Result<(), Failed> {
    let program = nvcc_built("rdc", &["rdc_a.cu", "rdc_b.cu"], &["-rdc=true"])?;
    let out = on_runtime(13, &program, &[], &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink")])?;
    same("rdc", &stdout(&out), "relocatable device code: cudaSuccess, first 7 last 1006\n")
}

/// The runtime's semantics, one fact a line, the same with the legacy and the per-thread
/// default stream (`semantics.cu` calls the driver too: linked against the shim's libcuda).
fn semantics_hold() -> Result<(), Failed> {
    let legacy = nvcc_built("semantics", &["semantics.cu"], &["-lcuda"])?;
    let per_thread = nvcc_built("semantics_ptds", &["semantics.cu"], &["-lcuda", "--default-stream", "per-thread"])?;
    for program in [legacy, per_thread] {
        let out = on_runtime(13, &program, &[], &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink")])?;
        same(&program.display().to_string(), &stdout(&out), &expected("semantics.txt")?)?;
    }
    Ok(())
}

/// No loader warning: each export has the version a program linked against NVIDIA's expects.
fn no_loader_warning(out: &std::process::Output) -> Result<(), Failed> {
    match stderr(out).lines().find(|l| l.contains("version information") || l.contains("version `")) {
        Some(line) => Err(format!("the loader warned: {line}").into()),
        None => Ok(()),
    }
}

fn same(what: &str, got: &str, want: &str) -> Result<(), Failed> {
    match got == want {
        true => Ok(()),
        false => Err(format!("{what}: printed\n{got}\nexpected\n{want}").into()),
    }
}

fn pool_peers_runs(topology: &'static str) -> Result<(), Failed> {
    let program = pool_peers(false)?;
    for part in ["one", "two"] {
        let out = on_runtime(13, &program, &[part], &[("PEERPOOL_TOPOLOGY", topology)])?;
        if !out.status.success() {
            return Err(format!("pool_peers {part} failed ({}): {}{}", out.status, stdout(&out), stderr(&out)).into());
        }
        no_loader_warning(&out)?;
        same(&format!("pool_peers {part}"), &stdout(&out), &expected(&format!("pool_peers.{part}.txt"))?)?;
    }
    Ok(())
}

/// A driver call failed by a fault rule reaches the program as the runtime's error for it.
fn fault_rule_reaches_the_program() -> Result<(), Failed> {
    let program = pool_peers(false)?;
    let rule = (peerpool_sim::env::FAULTS, "cuMemAllocFromPoolAsync=CUDA_ERROR_OUT_OF_MEMORY");
    let out = on_runtime(13, &program, &["one"], &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink"), rule])?;
    let line = "fail cudaMallocFromPoolAsync(&data, bytes, pool, s): cudaErrorMemoryAllocation";
    match stdout(&out).lines().any(|l| l == line) && out.status.code() == Some(1) {
        true => Ok(()),
        false => Err(format!("expected the line {line:?} and status 1, got {}: {}", out.status, stdout(&out)).into()),
    }
}

fn static_runtime_is_refused() -> Result<(), Failed> {
    let program = pool_peers(true)?;
    let peerpool = build_dir().join("peerpool");
    let out = Command::new(&peerpool)
        .args(["sim", "--topology", "two_h200_nvlink", "--"])
        .arg(&program)
        .arg("one")
        .env("PEERPOOL_SHIM", build_dir().join("libpeerpool_shim.so"))
        .output()
        .map_err(|e| format!("running {}: {e}", peerpool.display()))?;
    let err = stderr(&out);
    match out.status.code() == Some(65)
        && err.contains("carries NVIDIA's CUDA runtime statically")
        && stdout(&out).is_empty()
    {
        true => Ok(()),
        false => Err(format!("expected exit 65 and one line, got {}: {err}", out.status).into()),
    }
}

fn host12_runs(topology: &'static str) -> Result<(), Failed> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let made = BUILT.get_or_init(|| {
        let root = PathBuf::from(std::env::var(CUDA12).map_err(|_| format!("{CUDA12} is not set"))?);
        let lib = root.join("cuda_runtime/lib");
        let exe = shim_dir().map_err(|e| e.message().unwrap_or_default().to_string())?.join("host12");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let out = Command::new(cxx)
            .arg(format!("-I{}", root.join("cuda_runtime/include").display()))
            .arg(format!("-I{}", root.join("cuda_nvcc/include").display()))
            .arg(programs().join("host12.cpp"))
            .arg(lib.join("libcudart.so.12"))
            .arg("-o")
            .arg(&exe)
            .output()
            .map_err(|e| format!("running c++: {e}"))?;
        match out.status.success() {
            true => Ok(exe),
            false => Err(format!("c++ failed: {}", String::from_utf8_lossy(&out.stderr))),
        }
    });
    let program = made.clone().map_err(Failed::from)?;
    let out = on_runtime(12, &program, &[], &[("PEERPOOL_TOPOLOGY", topology)])?;
    if !out.status.success() {
        return Err(format!("host12 failed ({}): {}{}", out.status, stdout(&out), stderr(&out)).into());
    }
    no_loader_warning(&out)?;
    same("host12", &stdout(&out), &expected("host12.txt")?)
}

/// The functions a library defines (`nm -D --defined-only`), each `name@@version`.
fn defined(library: &Path) -> Result<BTreeSet<String>, Failed> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only", "--with-symbol-versions"])
        .arg(library)
        .output()
        .map_err(|e| format!("running nm: {e}"))?;
    if !out.status.success() {
        return Err(format!("nm {}: {}", library.display(), stderr(&out)).into());
    }
    Ok(stdout(&out)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, kind, name) = (f.next()?, f.next()?, f.next()?);
            (kind == "T").then(|| name.to_string())
        })
        .collect())
}

fn listed(major: u32) -> Result<BTreeSet<String>, Failed> {
    let text = expected(&format!("../../exports/libcudart.so.{major}"))?;
    Ok(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect())
}

/// Peerpool's library of `major` exports exactly the list, each under `libcudart.so.<major>`.
fn exports_the_list(major: u32) -> Result<(), Failed> {
    let library = build_dir().join(format!("libpeerpool_cudart{major}.so"));
    if !library.is_file() {
        return Err(format!("no {} (cargo build -p peerpool-cudart{major})", library.display()).into());
    }
    let node = format!("libcudart.so.{major}");
    let ours = defined(&library)?;
    let unversioned: Vec<_> = ours.iter().filter(|n| !n.ends_with(&format!("@@{node}"))).collect();
    if !unversioned.is_empty() {
        return Err(format!("exported outside the version node {node}: {unversioned:?}").into());
    }
    let names: BTreeSet<String> = ours.iter().filter_map(|n| n.split("@@").next()).map(String::from).collect();
    let list = listed(major)?;
    let missing: Vec<_> = list.difference(&names).collect();
    let extra: Vec<_> = names.difference(&list).collect();
    match missing.is_empty() && extra.is_empty() {
        true => Ok(()),
        false => Err(format!("not exported: {missing:?}; exported beyond NVIDIA's: {extra:?}").into()),
    }
}

/// The committed list of `major` is what NVIDIA's libraries of that major export (the union of
/// the releases given).
fn the_list_is_nvidias(major: u32) -> Result<(), Failed> {
    let libraries: Vec<PathBuf> = match major {
        12 => vec![PathBuf::from(std::env::var(CUDA12)?).join("cuda_runtime/lib/libcudart.so.12")],
        _ => vec![
            PathBuf::from(std::env::var(CUDA_INCLUDE)?).join("../lib/libcudart.so.13"),
            Path::new(&std::env::var(NVCC_NEWEST)?).parent().unwrap_or(Path::new("/")).join("../lib/libcudart.so.13"),
        ],
    };
    let mut nvidia = BTreeSet::new();
    for library in &libraries {
        nvidia.extend(defined(library)?.iter().filter_map(|n| n.split("@@").next()).map(String::from));
    }
    let list = listed(major)?;
    match nvidia == list {
        true => Ok(()),
        false => Err(format!(
            "NVIDIA's exports beyond the list: {:?}; listed beyond NVIDIA's: {:?}",
            nvidia.difference(&list).collect::<Vec<_>>(),
            list.difference(&nvidia).collect::<Vec<_>>()
        )
        .into()),
    }
}

fn main() -> ExitCode {
    let mut trials = Vec::new();
    for stem in TOPOLOGIES {
        trials.push(trial_needing(format!("pool_peers_runs::{stem}"), &[NVCC, CUDA_INCLUDE], move || {
            pool_peers_runs(stem)
        }));
        trials.push(trial(format!("host12_runs::{stem}"), CUDA12, move || host12_runs(stem)));
    }
    trials.push(trial_needing(
        "fault_rule_reaches_the_program".into(),
        &[NVCC, CUDA_INCLUDE],
        fault_rule_reaches_the_program,
    ));
    trials.push(trial_needing(
        "relocatable_device_code_runs".into(),
        &[NVCC, CUDA_INCLUDE],
        relocatable_device_code_runs,
    ));
    trials.push(trial_needing("semantics_hold".into(), &[NVCC, CUDA_INCLUDE], semantics_hold));
    trials.push(trial_needing("static_runtime_is_refused".into(), &[NVCC, CUDA_INCLUDE], static_runtime_is_refused));
    for major in [12, 13] {
        let name = format!("exports_the_list::{major}");
        let built = build_dir().join(format!("libpeerpool_cudart{major}.so")).is_file();
        if !built {
            eprintln!("skipped: {name}: peerpool's runtime is not built (cargo build -p peerpool-cudart{major})");
        }
        trials.push(libtest_mimic::Trial::test(name, move || exports_the_list(major)).with_ignored_flag(!built));
    }
    trials.push(trial("the_list_is_nvidias::12".into(), CUDA12, || the_list_is_nvidias(12)));
    trials.push(trial_needing("the_list_is_nvidias::13".into(), &[CUDA_INCLUDE, NVCC_NEWEST], || {
        the_list_is_nvidias(13)
    }));
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    support::clean_up();
    conclusion.exit_code()
}
