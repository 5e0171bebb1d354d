//! `peerpool sim`: runs any program on a simulated topology, with fault rules and a call trace,
//! through the libcuda shim (`peerpool-shim`), or prints the environment that does so. With
//! `--real` the shim forwards to NVIDIA's libcuda instead, through the same rules and trace.
//! A program on the CUDA runtime gets peerpool's (`runtime_lib`), over the shim either way.

use crate::carried::{self, Placed, Source};
use crate::exit;
use crate::runtime_lib::{self, Program, RUNTIMES};
use crate::trusted;
use peerpool_sim::env::{
    self, BACKEND, DRIVER_VERSION, FAULTS, KERNEL_TIMEOUT, LIBCUDA, SEED, TIMING, TOPOLOGY, TRACE,
};
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The shim's file as cargo builds it; installed as `libcuda.so` and `libcuda.so.1`.
pub const SHIM_FILE: &str = "libpeerpool_shim.so";
/// Names the shim's file when it is not beside this binary.
pub const SHIM_ENV: &str = "PEERPOOL_SHIM";

/// What `peerpool sim` was asked.
#[derive(clap::Args)]
pub struct Options {
    /// A catalog name (`peerpool topologies`) or a TOML file: sets $PEERPOOL_TOPOLOGY for
    /// the program (the shim and peerpool's fixtures read it); default: that variable, else
    /// two_h200_nvlink.
    #[arg(long)]
    pub topology: Option<String>,
    /// Fault rules: `call[@n|~p]=CODE[!sticky|!transient][!before|!after]`, separated by `;`.
    #[arg(long)]
    pub faults: Option<String>,
    /// Append one line per driver call to this file (`-` for stderr).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Seed of the `~p` fault rules' draws.
    #[arg(long)]
    pub seed: Option<u64>,
    /// The simulated driver's CUDA version, `13.0` or `13000`: what cuDriverGetVersion
    /// answers and which PTX ISA loads (default: the topology's, else 13.5, the newest
    /// whose PTX the simulator reads).
    #[arg(long, conflicts_with = "real", value_name = "X.Y")]
    pub driver_version: Option<String>,
    /// Seconds one kernel launch may run before the simulated driver stops it with
    /// CUDA_ERROR_LAUNCH_TIMEOUT, a line every 10 s saying it still runs; 0: no limit
    /// (default: the topology's, else 120).
    #[arg(long, conflicts_with = "real", value_name = "SECONDS")]
    pub kernel_timeout: Option<u64>,
    /// The simulator's timing model: a calibration JSON file (default: the H200s').
    /// Programs built on peerpool print their projected wall time from it.
    #[arg(long, conflicts_with = "real")]
    pub timing: Option<PathBuf>,
    /// The shim library (default: $PEERPOOL_SHIM, else the one this binary carries, written
    /// to ~/.cache/peerpool, else beside this binary).
    #[arg(long)]
    pub shim: Option<PathBuf>,
    /// Forward every call to NVIDIA's libcuda instead of simulating: the real GPUs answer,
    /// through the fault rules and the trace.
    #[arg(long, conflicts_with = "topology")]
    pub real: bool,
    /// NVIDIA's libcuda for --real (default: found as the dynamic loader would).
    #[arg(long, requires = "real")]
    pub libcuda: Option<PathBuf>,
    /// Preload peerpool's CUDA runtime of this major (12 or 13) whatever the program needs
    /// itself: for an interpreter whose libraries load the runtime (Python with PyTorch), which
    /// the program's own file does not show.
    #[arg(long, value_name = "MAJOR", value_parser = clap::value_parser!(u32).range(12..=13))]
    pub cudart: Option<u32>,
    /// Print `export` lines for a shell instead of running a command.
    #[arg(long)]
    pub print_env: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true)]
    pub command: Vec<OsString>,
}

pub fn run(options: Options) -> ExitCode {
    match prepare(&options) {
        Err(Refused { code, why }) => {
            eprintln!("peerpool sim: {}", peerpool::text::escaped(&why));
            exit::code(code)
        }
        Ok((vars, placed, _)) if options.print_env => {
            // The printed environment is for a program started later: its directories stay.
            for (i, placed) in placed.into_iter().enumerate() {
                let what = if i == 0 { "the shim" } else { "peerpool's runtime" };
                if let Some(dir) = placed.run_dir.map(carried::RunDir::keep) {
                    eprintln!("peerpool sim: {what} is in {}, made for this run; remove it when done", dir.display());
                }
            }
            for (name, value) in vars {
                println!("export {name}={}", shell_quote(&value));
            }
            ExitCode::SUCCESS
        }
        Ok((vars, placed, trace_reader)) => {
            let code = launch(&options.command, &vars);
            // The program has exited: a directory made for this run goes, and the trace FIFO's
            // reader may see its end.
            drop((placed, trace_reader));
            code
        }
    }
}

/// What [`prepare`] gives: the variables, the places of the shim and of peerpool's runtime
/// libraries, and a trace FIFO held open.
type Prepared = (Vec<(String, String)>, Vec<Placed>, Option<std::fs::File>);

/// Why the program is not run: a line, and the exit status.
struct Refused {
    code: u8,
    why: String,
}

impl From<String> for Refused {
    fn from(why: String) -> Refused {
        Refused { code: exit::BAD_INPUT, why }
    }
}

impl From<&str> for Refused {
    fn from(why: &str) -> Refused {
        why.to_string().into()
    }
}

/// The variables to set, after checking every setting as the shim will (those the options give
/// and those the environment already holds, so a mistake is found here, not in the program's
/// first `cuInit`) and installing the shim and peerpool's runtime (with `LD_PRELOAD` for a
/// program that needs the runtime); their places, held until the program exits; and
/// a trace FIFO opened for writing, held as long, so that its reader sees the end only when the
/// program's trace has ended.
fn prepare(options: &Options) -> Result<Prepared, Refused> {
    if options.command.is_empty() && !options.print_env {
        return Err("give a command to run after `--`, or --print-env".into());
    }
    let mut vars = Vec::new();
    if let Some(topology) = &options.topology {
        vars.push((TOPOLOGY.to_string(), topology.clone()));
    }
    if let Some(faults) = &options.faults {
        vars.push((FAULTS.to_string(), faults.clone()));
    }
    if let Some(trace) = &options.trace {
        vars.push((TRACE.to_string(), trace_setting(trace)?));
    }
    if let Some(seed) = options.seed {
        vars.push((SEED.to_string(), seed.to_string()));
    }
    if let Some(version) = &options.driver_version {
        vars.push((DRIVER_VERSION.to_string(), version.clone()));
    }
    if let Some(seconds) = options.kernel_timeout {
        vars.push((KERNEL_TIMEOUT.to_string(), seconds.to_string()));
    }
    if let Some(timing) = &options.timing {
        let absolute = std::path::absolute(timing).map_err(|e| format!("--timing {}: {e}", timing.display()))?;
        vars.push((TIMING.to_string(), absolute.display().to_string()));
    }
    if options.real {
        vars.push((BACKEND.to_string(), "real".into()));
    }
    if let Some(libcuda) = &options.libcuda {
        let absolute = std::path::absolute(libcuda).map_err(|e| format!("--libcuda {}: {e}", libcuda.display()))?;
        if !absolute.is_file() {
            return Err(format!("--libcuda {}: no such file", libcuda.display()).into());
        }
        if !is_shared_library(&absolute) {
            return Err(format!("--libcuda {}: not a shared library (an ELF of type ET_DYN)", libcuda.display()).into());
        }
        vars.push((LIBCUDA.to_string(), absolute.display().to_string()));
    }
    // Checked here as the shim will read them: what the options set, else what the
    // environment holds (the program inherits it). A trace that is a FIFO is opened here and
    // kept open: closing it would end its reader's input before the program writes a line.
    let setting = |name: &str| match vars.iter().find(|(n, _)| n == name) {
        Some((_, given)) => Ok(Some(given.clone())),
        None => env::var(name),
    };
    let fifo = |path: &str| std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    let trace_reader = match setting(TRACE)?.filter(|t| fifo(t)) {
        Some(path) => Some(fifo_with_a_reader(Path::new(&path))?),
        None => None,
    };
    env::read(|name| Ok(setting(name)?.filter(|v| !(name == TRACE && fifo(v)))))?;
    let placed = locate_shim(options.shim.clone())?;
    let shim = placed.shim.clone();
    if options.real && options.libcuda.is_none() {
        let path = env::var("LD_LIBRARY_PATH")?;
        if env::libcuda_candidates(path.as_deref(), &shim).is_empty() {
            return Err("--real: no NVIDIA libcuda.so.1 found as the loader would look; name it with --libcuda".into());
        }
    }
    let libcuda_dir = install(&shim, "peerpool-libcuda", &env::DRIVER_NAMES)?;
    let mut placed = vec![placed];
    let mut served = Vec::new();
    for runtime in &RUNTIMES {
        let installed = libcuda_dir.join(runtime.soname);
        match runtime_lib::find(runtime) {
            Some(file) => {
                let library = carried::place(Source::File(&file), runtime.file, &carried::Places::from_env())
                    .map_err(|e| format!("peerpool's runtime {}: {e}", file.display()))?;
                // `shim` names the placed file, here the runtime's.
                link(&installed, &library.shim)?;
                placed.push(library);
                served.push(runtime.major);
            }
            // A link an earlier run made goes: without the library, nothing changes.
            None => match std::fs::remove_file(&installed) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("removing {}: {e}", installed.display()).into());
                }
                _ => {}
            },
        }
    }
    if !options.print_env
        && let Some(preload) = preload(&options.command[0], options.real, &libcuda_dir, &served, options.cudart)?
    {
        vars.push(("LD_PRELOAD".to_string(), preload));
    }
    let mut dirs = vec![libcuda_dir];
    if !options.real {
        dirs.push(install(&shim, "peerpool-nvjitlink", &env::NVJITLINK_NAMES)?);
    }
    let mut path: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    path.extend(env::var("LD_LIBRARY_PATH")?.filter(|rest| !rest.is_empty()));
    let path = path.join(":");
    vars.push(("LD_LIBRARY_PATH".to_string(), path));
    Ok((vars, placed, trace_reader))
}

/// `LD_PRELOAD` for the program `command` names, when it needs the CUDA runtime as a shared
/// library: peerpool's, installed in `dir` (majors `served`), before what the variable holds.
/// Preloaded, since an RPATH may name NVIDIA's runtime, and RPATH goes before
/// `LD_LIBRARY_PATH`. A program that is no ELF file (a script) is run as it is; one carrying
/// NVIDIA's runtime statically is refused, unless `real` GPUs serve it.
fn preload(
    command: &OsStr,
    real: bool,
    dir: &Path,
    served: &[u32],
    asked: Option<u32>,
) -> Result<Option<String>, Refused> {
    let path = runtime_lib::resolve(command);
    let program = path.as_deref().and_then(Program::read);
    let name = path.as_deref().unwrap_or(Path::new(command)).display();
    if let Some(program) = &program
        && program.carries_runtime()
        && !real
    {
        return Err(Refused {
            code: exit::STATIC_RUNTIME,
            why: format!(
                "{name} carries NVIDIA's CUDA runtime statically, which cannot run on simulated GPUs: rebuild it with \
                 -cudart shared (CMake: CMAKE_CUDA_RUNTIME_LIBRARY=Shared) so that peerpool's runtime serves it, or run \
                 it on GPUs with --real"
            ),
        });
    }
    let wanted = |r: &&runtime_lib::Runtime| program.as_ref().is_some_and(|p| p.needs(r)) || asked == Some(r.major);
    let mut preload = Vec::new();
    for runtime in RUNTIMES.iter().filter(wanted) {
        if !served.contains(&runtime.major) {
            return Err(format!(
                "{name} needs {} and peerpool's runtime library for it was not found (build it with cargo build -p \
                 peerpool-cudart{}, or set {})",
                runtime.soname,
                runtime.major,
                runtime_lib::DIR_ENV
            )
            .into());
        }
        let installed = dir.join(runtime.soname).display().to_string();
        // The loader splits the variable at spaces and colons.
        if installed.contains([' ', ':']) {
            return Err(format!(
                "{name} needs {installed} preloaded, and LD_PRELOAD cannot hold a path with a space or a colon"
            )
            .into());
        }
        preload.push(installed);
    }
    if preload.is_empty() {
        return Ok(None);
    }
    preload.extend(env::var("LD_PRELOAD")?.filter(|rest| !rest.trim().is_empty()));
    Ok(Some(preload.join(":")))
}

/// The FIFO `path` opened for writing, which succeeds only where a reader has it open: one with
/// no reader would hold the program's first driver call (or lose its trace), so it is refused
/// before the program starts.
fn fifo_with_a_reader(path: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO with no reader fails (ENXIO) instead of waiting for one.
    let opened = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(path);
    opened.map_err(|e| match e.raw_os_error() == Some(libc::ENXIO) {
        true => format!("--trace {}: a FIFO that no process reads: start its reader first", path.display()),
        false => format!("--trace {}: {e}", path.display()),
    })
}

/// Whether `path` is an ELF shared object (`e_type` `ET_DYN`), as a libcuda must be.
fn is_shared_library(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 18];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header));
    read.is_ok() && header.starts_with(b"\x7fELF") && u16::from_le_bytes([header[16], header[17]]) == 3
}

/// `--trace` as the shim reads it: `-` (stderr) as given, a file made absolute, since the
/// program may change directory before its first `cuInit`.
fn trace_setting(trace: &Path) -> Result<String, String> {
    if trace == Path::new("-") {
        return Ok("-".into());
    }
    let absolute = std::path::absolute(trace).map_err(|e| format!("--trace {}: {e}", trace.display()))?;
    Ok(absolute.display().to_string())
}

/// The shim: `--shim`, else `$PEERPOOL_SHIM`, else the one this binary carries (built from a
/// package), else beside this binary (where `cargo build -p peerpool-shim` puts it); placed
/// where no other user can change it (`carried::place`).
fn locate_shim(explicit: Option<PathBuf>) -> Result<Placed, String> {
    let places = carried::Places::from_env();
    let named = explicit.or_else(|| std::env::var_os(SHIM_ENV).map(PathBuf::from));
    if named.is_none()
        && let Some((bytes, id)) = carried::carried()
    {
        return carried::place(Source::Bytes(bytes, id), SHIM_FILE, &places)
            .map_err(|e| format!("the shim this binary carries: {e}"));
    }
    match named.or_else(|| carried::beside_this_binary(SHIM_FILE)) {
        Some(path) if path.is_file() => carried::place(Source::File(&path), SHIM_FILE, &places)
            .map_err(|e| format!("the shim {}: {e}", path.display())),
        Some(path) => Err(format!(
            "no shim at {} (install the command with the shim it carries: `cargo install --path host/cli --features \
             embed-shim`; in a checkout, build it beside the command with `cargo build --release -p peerpool-shim`; \
             or name it with --shim or ${SHIM_ENV})",
            path.display()
        )),
        None => Err(format!("cannot tell where the shim is: name it with --shim or ${SHIM_ENV}")),
    }
}

/// A directory `dir` beside the shim holding `names`, links to it: what goes first on
/// `LD_LIBRARY_PATH` ([`env::DRIVER_NAMES`], [`env::NVJITLINK_NAMES`]). Made once; a link left
/// by another build is replaced. The shim and the directory must pass `trusted::check`: the
/// loader follows both paths later.
pub fn install(shim: &Path, dir: &str, names: &[&str]) -> Result<PathBuf, String> {
    let euid = trusted::euid();
    let shim = trusted::check(&trusted::Host, shim, euid).map_err(|e| format!("the shim: {e}"))?;
    let shim = shim.as_path();
    let dir = shim.parent().ok_or("the shim has no directory")?.join(dir);
    let dir = trusted::create_dir_all(&trusted::Host, &dir, euid).map_err(|e| format!("the links' directory: {e}"))?;
    for &name in names {
        link(&dir.join(name), shim)?;
    }
    Ok(dir)
}

/// `link` made a link to `target` (a checked path), unless it is one already.
fn link(link: &Path, target: &Path) -> Result<(), String> {
    if std::fs::read_link(link).is_ok_and(|held| held == target) {
        return Ok(());
    }
    // A fresh link beside, renamed over the old: never a moment without one.
    let name = link.file_name().ok_or("a link without a name")?.to_string_lossy();
    let fresh = link.with_file_name(format!(".{name}.{}", std::process::id()));
    let _ = std::fs::remove_file(&fresh);
    std::os::unix::fs::symlink(target, &fresh)
        .and_then(|()| std::fs::rename(&fresh, link))
        .map_err(|e| format!("linking {}: {e}", link.display()))
}

/// Runs the command with `vars`; its exit status is this one's (128 + the signal that ended it).
fn launch(command: &[OsString], vars: &[(String, String)]) -> ExitCode {
    let mut child = Command::new(&command[0]);
    child.args(&command[1..]).envs(vars.iter().map(|(n, v)| (n, v)));
    match child.status() {
        Ok(status) => {
            let signal = std::os::unix::process::ExitStatusExt::signal(&status).map(|s| 128 + s);
            ExitCode::from(status.code().or(signal).unwrap_or(1).clamp(0, 255) as u8)
        }
        Err(e) => {
            eprintln!("peerpool sim: cannot run {:?}: {e}", command[0]);
            exit::code(exit::BAD_INPUT)
        }
    }
}

/// `value` as one word for a POSIX shell.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_to_stderr_stays_a_dash_and_a_file_becomes_absolute() {
        assert_eq!(trace_setting(Path::new("-")).unwrap(), "-");
        let file = trace_setting(Path::new("calls.txt")).unwrap();
        assert!(Path::new(&file).is_absolute() && file.ends_with("calls.txt"), "{file}");
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(shell_quote("a'b c"), r"'a'\''b c'");
    }

    #[test]
    fn install_links_both_names_and_is_repeatable() {
        let dir = std::env::temp_dir().join(format!("peerpool-sim-install-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let shim = dir.join(SHIM_FILE);
        std::fs::write(&shim, b"not really a library").unwrap();
        let installed = install(&shim, "links", &env::DRIVER_NAMES).unwrap();
        for _ in 0..2 {
            for name in env::DRIVER_NAMES {
                assert_eq!(std::fs::read_link(installed.join(name)).unwrap(), shim);
            }
            install(&shim, "links", &env::DRIVER_NAMES).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
