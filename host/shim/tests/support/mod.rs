//! What the shim's client tests share: the shim installed as `libcuda.so.1` in a directory of
//! their own, C programs compiled against NVIDIA's header and linked with it, and running a
//! program with chosen settings and nothing else of peerpool's in its environment.
//!
//! The C programs need NVIDIA's `cuda.h` (`$PEERPOOL_CUDA_INCLUDE`), the scripts a Python
//! with cuda-core (`$PEERPOOL_PYTHON`), and the foreign-image client images built by NVIDIA's
//! `nvcc` (`$PEERPOOL_NVCC`): `.ci/run` installs them from PyPI into throwaway virtual
//! environments. Without them those trials are skipped, with the reason printed.

#![allow(dead_code)] // each test binary uses its own part

use libtest_mimic::{Failed, Trial};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

pub const CUDA_INCLUDE: &str = "PEERPOOL_CUDA_INCLUDE";
pub const PYTHON: &str = "PEERPOOL_PYTHON";
/// NVIDIA's `nvcc` (the PyPI wheel's will do), for the images the foreign-image client loads.
pub const NVCC: &str = "PEERPOOL_NVCC";
/// A newer `nvcc` whose PTX is of a newer ISA than [`NVCC`]'s (CUDA 13.5's: ISA 9.5).
pub const NVCC_NEWEST: &str = "PEERPOOL_NVCC_NEWEST";

/// What a client printed on the H200s against NVIDIA's libcuda, committed under
/// `docs/hardware/recorded/` (`name` below it) and found at run time.
pub fn recorded(name: &str) -> Result<String, Failed> {
    let path = recorded_dir()?.join(name);
    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// Where the GPUs' records are (`docs/hardware/recorded`), found at run time.
pub fn recorded_dir() -> Result<PathBuf, Failed> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR is not set")?;
    Ok(Path::new(&manifest).join("../../docs/hardware/recorded"))
}

/// The directory of the build these tests belong to (`target/<profile>`), found at run time.
pub fn build_dir() -> PathBuf {
    peerpool::child::build_dir().expect("the test lies in target/<profile>/deps")
}

/// A directory holding the shim as `libcuda.so` and `libcuda.so.1`, and as nvJitLink, as
/// `peerpool sim` links it (`peerpool_sim::env::NVJITLINK_NAMES`), made once per run.
static SHIM_DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();

pub fn shim_dir() -> Result<&'static Path, Failed> {
    let made = SHIM_DIR.get_or_init(|| {
        // `$PEERPOOL_SHIM` first, as `peerpool sim` reads it: a test archive carries no cdylib.
        let shim = match std::env::var_os("PEERPOOL_SHIM") {
            Some(named) => PathBuf::from(named),
            None => build_dir().join("libpeerpool_shim.so"),
        };
        if !shim.is_file() {
            return Err(format!(
                "no shim at {} (build it: cargo build -p peerpool-shim; a test archive carries none: \
                 name it with PEERPOOL_SHIM)",
                shim.display()
            ));
        }
        let exe = peerpool::child::this_binary().map_err(|e| e.to_string())?;
        let test = exe.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = std::env::temp_dir().join(format!("peerpool-shim-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        for name in peerpool_sim::env::DRIVER_NAMES.into_iter().chain(peerpool_sim::env::NVJITLINK_NAMES) {
            let _ = std::fs::remove_file(dir.join(name));
            std::os::unix::fs::symlink(&shim, dir.join(name)).map_err(|e| e.to_string())?;
        }
        Ok(dir)
    });
    made.as_deref().map_err(|e| e.clone().into())
}

/// Removes the directory `shim_dir` made.
pub fn clean_up() {
    if let Some(Ok(dir)) = SHIM_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Where the client programs' sources are, found at run time.
pub fn clients() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("tests/clients")
}

/// The PTX executor's corpus (`host/ptx/tests/corpus`), found at run time.
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("../ptx/tests/corpus")
}

/// `clients/<name>.c`, compiled once against NVIDIA's header and linked with the shim's `-lcuda`.
pub fn c_program(name: &'static str) -> Result<PathBuf, Failed> {
    c_program_with(name, &[])
}

/// [`c_program`] compiled with the C compiler's `flags` besides (such as `-ffast-math`).
pub fn c_program_with(name: &'static str, flags: &'static [&'static str]) -> Result<PathBuf, Failed> {
    type Built = HashMap<(&'static str, &'static [&'static str]), Result<PathBuf, String>>;
    static BUILT: Mutex<Option<Built>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let built = built.get_or_insert_with(HashMap::new).entry((name, flags)).or_insert_with(|| {
        let include = std::env::var(CUDA_INCLUDE).map_err(|_| format!("{CUDA_INCLUDE} is not set"))?;
        let dir = shim_dir().map_err(|e| e.message().unwrap_or_default().to_string())?;
        let exe = dir.join([name].into_iter().chain(flags.iter().copied()).collect::<Vec<_>>().join(""));
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let out = Command::new(cc)
            .arg("-o")
            .arg(&exe)
            .arg(clients().join(format!("{name}.c")))
            .args(flags)
            .arg(format!("-I{include}"))
            .arg(format!("-L{}", dir.display()))
            .arg("-lcuda")
            .output()
            .map_err(|e| format!("running cc: {e}"))?;
        match out.status.success() {
            true => Ok(exe),
            false => Err(format!("cc failed: {}", String::from_utf8_lossy(&out.stderr))),
        }
    });
    built.clone().map_err(Failed::from)
}

/// The images `clients/images/build.sh` makes from `kernels.cu` with `$PEERPOOL_NVCC` (PTX,
/// an sm_90 cubin, fatbins plain and compressed), built once per run into the shim's directory.
pub fn images() -> Result<&'static Path, Failed> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let nvcc = PathBuf::from(std::env::var_os(NVCC).ok_or(format!("{NVCC} is not set"))?);
        let bin = nvcc.parent().ok_or(format!("{NVCC} names no file: {}", nvcc.display()))?;
        let out = shim_dir().map_err(|e| e.message().unwrap_or_default().to_string())?.join("images.d"); // beside the client named images
        let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
            std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default(),
        ))
        .map_err(|e| e.to_string())?;
        let made = Command::new("bash")
            .arg(clients().join("images/build.sh"))
            .arg(&out)
            .env("PATH", path)
            .output()
            .map_err(|e| format!("running build.sh: {e}"))?;
        match made.status.success() {
            true => Ok(out),
            false => Err(format!("build.sh failed: {}", String::from_utf8_lossy(&made.stderr))),
        }
    });
    built.as_deref().map_err(|e| e.clone().into())
}

/// The -gencode table's images (`clients/images/gencode.sh`) built by the `nvcc` that the
/// variable `nvcc` names, labelled `label`, once per run into the shim's directory.
pub fn gencode_images(nvcc: &'static str, label: &'static str) -> Result<PathBuf, Failed> {
    static BUILT: Mutex<Option<HashMap<&'static str, Result<PathBuf, String>>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let made = built.get_or_insert_with(HashMap::new).entry(label).or_insert_with(|| {
        let nvcc = PathBuf::from(std::env::var_os(nvcc).ok_or(format!("{nvcc} is not set"))?);
        let bin = nvcc.parent().ok_or(format!("{} names no file", nvcc.display()))?;
        let out = shim_dir().map_err(|e| e.message().unwrap_or_default().to_string())?.join("gencode.d");
        let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
            std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default(),
        ))
        .map_err(|e| e.to_string())?;
        let made = Command::new("bash")
            .arg(clients().join("images/gencode.sh"))
            .arg(&out)
            .arg(label)
            .env("PATH", path)
            .output()
            .map_err(|e| format!("running gencode.sh: {e}"))?;
        match made.status.success() {
            true => Ok(out),
            false => Err(format!("gencode.sh failed: {}", String::from_utf8_lossy(&made.stderr))),
        }
    });
    made.clone().map_err(Failed::from)
}

/// Runs `program` with the shim first on the library path and `settings` in the environment.
pub fn run(program: &mut Command, settings: &[(&str, &str)]) -> Result<Output, Failed> {
    let dir = shim_dir()?;
    program.env("LD_LIBRARY_PATH", dir);
    for name in peerpool_sim::env::VARIABLES.into_iter().chain([peerpool_sim::visible::VISIBLE]) {
        program.env_remove(name);
    }
    program.envs(settings.iter().copied());
    Ok(program.output()?)
}

/// [`run`], killed and failed if it is still running after `limit`: for cases that once hung.
pub fn run_within(
    program: &mut Command,
    settings: &[(&str, &str)],
    limit: std::time::Duration,
) -> Result<Output, Failed> {
    let dir = shim_dir()?;
    program.env("LD_LIBRARY_PATH", dir);
    for name in peerpool_sim::env::VARIABLES.into_iter().chain([peerpool_sim::visible::VISIBLE]) {
        program.env_remove(name);
    }
    program.envs(settings.iter().copied());
    program.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = program.spawn()?;
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait()?.is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {limit:?}: killed").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(child.wait_with_output()?)
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A trial, or the same name skipped (the name is the same either way; the reason is printed
/// on stderr).
pub fn trial(name: String, needs: &str, test: impl FnOnce() -> Result<(), Failed> + Send + 'static) -> Trial {
    trial_needing(name, &[needs], test)
}

/// [`trial`] for a trial that needs every variable of `needs`.
pub fn trial_needing(
    name: String,
    needs: &[&str],
    test: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    match needs.iter().find(|n| std::env::var_os(n).is_none()) {
        None => Trial::test(name, test),
        Some(missing) => {
            eprintln!("skipped: {name}: {missing} is not set");
            Trial::test(name, test).with_ignored_flag(true)
        }
    }
}

/// The client, run through the shim on the simulated H200 pair, prints what it printed on a
/// real GPU with NVIDIA's driver (`record`), line for line.
pub fn same_as_on_the_h200s(program: &mut Command, record: &str) -> Result<(), Failed> {
    let want = recorded(record)?;
    // The H200s' driver is CUDA 13.0's.
    let out = run(program, &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink"), ("PEERPOOL_SIM_DRIVER_VERSION", "13.0")])?;
    match stdout(&out) {
        text if text == want => Ok(()),
        text => Err(format!("the H200s printed:\n{want}through the shim:\n{text}").into()),
    }
}
