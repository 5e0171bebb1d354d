//! What the environment asks of the libcuda shim (`peerpool-shim`), read at its first call and
//! checked up front by `peerpool sim`:
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `PEERPOOL_TOPOLOGY` | a catalog name (`eight_gpu_nvswitch`) or a TOML file ([`topology`]: the one topology setting, which [`crate::select`] reads too); `real` names none | `two_h200_nvlink` |
//! | `PEERPOOL_SIM_FAULTS` | fault rules, `call[@n\|~p]=CODE[!sticky\|!transient][!before\|!after]; ...` (`peerpool::fault`) | none |
//! | `PEERPOOL_SIM_TRACE` | a file to append one line per call to (`-` for stderr) | none |
//! | `PEERPOOL_SIM_SEED` | the seed of the `~p` rules' draws | 0 |
//! | `PEERPOOL_SIM_DRIVER_VERSION` | the simulated driver's CUDA version, `13.0` or `13000`: what `cuDriverGetVersion` answers, which entry points `cuGetProcAddress` gives and which PTX ISA loads | the topology's (`driver_version`), by default the newest whose PTX the executor reads (13.5) |
//! | `PEERPOOL_SIM_KERNEL_TIMEOUT` | seconds one kernel launch may run before the simulated driver stops it with `CUDA_ERROR_LAUNCH_TIMEOUT` (a line every 10 s says it still runs); 0: no limit | the topology's (`kernel_timeout_s`), by default 120 |
//! | `PEERPOOL_SIM_TIMING` | the timing model: a calibration JSON file (`peerpool_sim::timing`) | the H200s' (`host/sim/timing/h200.json`) |
//! | `PEERPOOL_SHIM_BACKEND` | `sim` (the simulator answers) or `real` (NVIDIA's libcuda does, through the rules and the trace) | `sim` |
//! | `PEERPOOL_SHIM_LIBCUDA` | NVIDIA's libcuda for `real`, an absolute path | found as the loader would |
//! | `CUDA_VISIBLE_DEVICES` | CUDA's own: which of the topology's GPUs the program sees, in which order (`crate::visible`) | all |
//!
//! Anything wrong is one line on stderr and an error from `cuInit`, never a crash.

use crate::{Latencies, Topology, catalog, catalog_topology};
use peerpool::fault::FaultPlan;
use peerpool::text::{echo, escaped};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The topology, for the shim and for code that opens its GPUs itself ([`crate::select`]).
pub const TOPOLOGY: &str = "PEERPOOL_TOPOLOGY";
/// Former names of [`TOPOLOGY`] (the in-process one, the shim's), still read as it; deprecated.
pub const TOPOLOGY_ALIASES: [&str; 2] = ["PEERPOOL_HARDWARE", "PEERPOOL_SIM_TOPOLOGY"];
pub const FAULTS: &str = "PEERPOOL_SIM_FAULTS";
pub const TRACE: &str = "PEERPOOL_SIM_TRACE";
pub const SEED: &str = "PEERPOOL_SIM_SEED";
pub const TIMING: &str = "PEERPOOL_SIM_TIMING";
pub const DRIVER_VERSION: &str = "PEERPOOL_SIM_DRIVER_VERSION";
pub const KERNEL_TIMEOUT: &str = "PEERPOOL_SIM_KERNEL_TIMEOUT";
pub const BACKEND: &str = "PEERPOOL_SHIM_BACKEND";
pub const LIBCUDA: &str = "PEERPOOL_SHIM_LIBCUDA";

/// The names of the variables, in the table's order, then the deprecated names.
pub const VARIABLES: [&str; 11] = [
    TOPOLOGY,
    FAULTS,
    TRACE,
    SEED,
    DRIVER_VERSION,
    KERNEL_TIMEOUT,
    TIMING,
    BACKEND,
    LIBCUDA,
    TOPOLOGY_ALIASES[0],
    TOPOLOGY_ALIASES[1],
];

/// The names a program loads the shim by: NVIDIA's driver's. What `peerpool sim` (and a test
/// harness) links to the shim in a directory put first on `LD_LIBRARY_PATH`.
pub const DRIVER_NAMES: [&str; 2] = ["libcuda.so", "libcuda.so.1"];

/// nvJitLink's names, also linked to the shim when the shim simulates (not when it passes calls
/// to NVIDIA's driver), in a directory of their own on `LD_LIBRARY_PATH`. cuda-python looks for a
/// library already loaded before it looks in wheels, and the loader finds one by its file: so
/// it finds the shim (loaded as the driver), which has no nvJitLink entry points. numba-cuda and
/// cuda.core then link through the driver's JIT linker, into PTX the simulator runs, where
/// nvJitLink would link into machine code it does not run.
pub const NVJITLINK_NAMES: [&str; 2] = ["libnvJitLink.so.12", "libnvJitLink.so.13"];

/// The symbol every build of the shim exports, which NVIDIA's libcuda does not: how a shim that
/// forwards tells a copy of itself from the real library, and how a process tells that the
/// libcuda it loads is the shim ([`crate::select::choice_from_env`]).
pub const SHIM_MARKER: &str = "peerpool_shim_pin_simulator";

/// Who answers the calls.
#[derive(Debug)]
pub enum Target {
    /// The simulator, on this machine.
    Simulated(Topology),
    /// NVIDIA's libcuda, forwarded to: at this path, or found as the loader would
    /// ([`libcuda_candidates`]).
    Real(Option<PathBuf>),
}

/// The shim's settings.
pub struct Config {
    /// Who answers.
    pub target: Target,
    /// The fault rules, seeded.
    pub plan: FaultPlan,
    /// Where trace lines go.
    pub trace: Option<Box<dyn Write + Send>>,
    /// The simulator's timing model, when not the built-in one.
    pub timing: Option<Latencies>,
    /// `CUDA_VISIBLE_DEVICES` names a GPU twice: `cuInit` fails with
    /// `CUDA_ERROR_INVALID_DEVICE`, as NVIDIA's driver answers it.
    pub visible_twice: bool,
}

/// The value of the variable `name`: `None` when unset, an error naming it when it is set to a
/// value that is not UTF-8 (never taken as unset). How the simulator, the shim and `peerpool
/// sim` read the environment (`peerpool::env`).
pub fn var(name: &str) -> Result<Option<String>, String> {
    peerpool::env::var(name).map_err(|e| e.to_string())
}

/// The topology setting from `var`: its value (trimmed; empty is unset) and the name it was
/// read under, [`TOPOLOGY`] or a deprecated name of it ([`TOPOLOGY_ALIASES`]). Two names set to
/// different values are an error, never resolved by an order between them; a value that is not
/// UTF-8 is an error naming its variable.
pub fn topology(
    var: impl Fn(&str) -> Result<Option<String>, String>,
) -> Result<Option<(&'static str, String)>, String> {
    let mut found: Option<(&'static str, String)> = None;
    for name in std::iter::once(TOPOLOGY).chain(TOPOLOGY_ALIASES) {
        let Some(value) = var(name)? else { continue };
        let value = value.trim();
        match &found {
            _ if value.is_empty() => {}
            None => found = Some((name, value.to_string())),
            Some((first, seen)) if seen != value => {
                return Err(format!(
                    "{first}={} and {name}={} disagree: {} are deprecated names of {TOPOLOGY}; set {TOPOLOGY} alone",
                    echo(seen),
                    echo(value),
                    TOPOLOGY_ALIASES.join(" and ")
                ));
            }
            Some(_) => {}
        }
    }
    Ok(found)
}

/// Reads the settings from `var` (the environment through [`var`], or a test's map); every
/// mistake is one line, what it echoes escaped and cut (`peerpool::text`).
pub fn read(var: impl Fn(&str) -> Result<Option<String>, String>) -> Result<Config, String> {
    read_settings(var).map_err(|e| escaped(&e))
}

fn read_settings(var: impl Fn(&str) -> Result<Option<String>, String>) -> Result<Config, String> {
    let set = |name| var(name).map(|v| v.filter(|v: &String| !v.is_empty()));
    // `real` names no topology: the CUDA driver's GPUs, whatever libcuda answers; here the
    // shim's default machine.
    let topology = topology(&var)?.filter(|(_, value)| value != "real");
    let target = match (set(BACKEND)?.as_deref(), set(LIBCUDA)?, topology) {
        (None | Some("sim"), None, topology) => Target::Simulated(
            topology.map_or_else(|| Ok(Topology::two_h200()), |(name, value)| load_topology(name, &value))?,
        ),
        (None | Some("sim"), Some(_), _) => return Err(format!("{LIBCUDA} is only read with {BACKEND}=real")),
        (Some("real"), None, Some((name, _))) => {
            return Err(format!("{name} has no meaning with {BACKEND}=real (the real GPUs answer)"));
        }
        (Some("real"), Some(path), _) if !Path::new(&path).is_absolute() => {
            return Err(format!("{LIBCUDA}: \"{}\" is not an absolute path", echo(&path)));
        }
        // A topology is for a copy of the shim named as the library (how CI tests forwarding);
        // the backend refuses it when the library turns out to be NVIDIA's.
        (Some("real"), Some(path), topology) => {
            if let Some((name, value)) = topology {
                load_topology(name, &value)?;
            }
            Target::Real(Some(PathBuf::from(path)))
        }
        (Some("real"), None, None) => Target::Real(None),
        (Some(other), _, _) => return Err(format!("{BACKEND}: \"{}\" is neither sim nor real", echo(other))),
    };
    let plan = match var(FAULTS)? {
        None => FaultPlan::new(),
        Some(text) => text.parse().map_err(|e| format!("{FAULTS}: {e}"))?,
    };
    let trace: Option<Box<dyn Write + Send>> = match set(TRACE)? {
        None => None,
        Some(path) if path == "-" => Some(Box::new(std::io::stderr())),
        Some(path) => {
            Some(Box::new(open_trace(&path).map_err(|e| format!("{TRACE}: cannot open {}: {e}", echo(&path)))?))
        }
    };
    let seed = match var(SEED)? {
        None => 0,
        Some(text) => text.trim().parse().map_err(|_| format!("{SEED}: \"{}\" is not a number", echo(&text)))?,
    };
    let timing = match set(TIMING)? {
        None => None,
        Some(_) if matches!(target, Target::Real(None)) => {
            return Err(format!("{TIMING} has no meaning with {BACKEND}=real (the real GPUs take real time)"));
        }
        Some(path) => Some(Latencies::load(Path::new(&path)).map_err(|e| format!("{TIMING}: {e}"))?),
    };
    let target = match (target, set(KERNEL_TIMEOUT)?) {
        (Target::Simulated(mut topology), Some(text)) => {
            let seconds = text.trim().parse().ok().filter(|s| *s <= 604_800);
            let why = || format!("{KERNEL_TIMEOUT}: \"{}\" is not a number of seconds up to a week", echo(&text));
            topology.kernel_timeout_s = seconds.ok_or_else(why)?;
            Target::Simulated(topology)
        }
        (Target::Real(_), Some(_)) => {
            return Err(format!("{KERNEL_TIMEOUT} has no meaning with {BACKEND}=real (the real GPUs run the kernels)"));
        }
        (target, None) => target,
    };
    let target = match (target, set(DRIVER_VERSION)?) {
        (Target::Simulated(mut topology), Some(text)) => {
            topology.driver_version = driver_version(&text).map_err(|e| format!("{DRIVER_VERSION}: {e}"))?;
            Target::Simulated(topology)
        }
        (Target::Real(_), Some(_)) => {
            return Err(format!("{DRIVER_VERSION} has no meaning with {BACKEND}=real (NVIDIA's driver says its own)"));
        }
        (target, None) => target,
    };
    // What this process sees of the simulated machine, as NVIDIA's driver reads the variable.
    let (target, visible_twice) = match (target, var(crate::visible::VISIBLE)?) {
        (Target::Simulated(topology), Some(list)) => match topology.visible(&list) {
            Some(view) => (Target::Simulated(view), false),
            None => (Target::Simulated(topology.visible("").unwrap_or(topology)), true),
        },
        (target, _) => (target, false),
    };
    Ok(Config { target, plan: FaultPlan { seed, ..plan }, trace, timing, visible_twice })
}

/// A CUDA version as `cuDriverGetVersion` writes it, from `13.0` or `13000`: a release of
/// CUDA 11.0 or later (the oldest whose PTX the simulator pairs with an ISA).
pub fn driver_version(text: &str) -> Result<i32, String> {
    let text = text.trim();
    let bad = || format!("\"{}\" is not a CUDA version (13.0, or 13000 as cuDriverGetVersion writes it)", echo(text));
    let version = match text.split_once('.') {
        Some((major, minor)) => {
            let (major, minor): (i32, i32) = (major.parse().map_err(|_| bad())?, minor.parse().map_err(|_| bad())?);
            if !(0..100).contains(&minor) || !(0..100).contains(&major) {
                return Err(bad());
            }
            major * 1000 + minor * 10
        }
        None => text.parse().map_err(|_| bad())?,
    };
    match (11_000..=99_990).contains(&version) {
        true => Ok(version),
        false => Err(format!("{} is not a CUDA release from 11.0 on", echo(text))),
    }
}

/// Opens the trace file for appending without waiting: a FIFO that nobody reads is refused
/// (`ENXIO`) instead of blocking the program's first `cuInit` for ever. Writes block as usual.
/// `ENXIO` has other causes, each said for what it is: a socket (which no `open` opens), or a
/// device with nothing behind it (`/dev/tty` in a process without a controlling terminal).
fn open_trace(path: &str) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::FileTypeExt;
    let path = Path::new(path);
    crate::input::open_without_waiting(OpenOptions::new().create(true).append(true), path).map_err(|e| {
        if e.raw_os_error() != Some(rustix::io::Errno::NXIO.raw_os_error()) {
            return e;
        }
        let why = match std::fs::metadata(path).map(|m| m.file_type()) {
            Ok(kind) if kind.is_fifo() => "a FIFO with no reader",
            Ok(kind) if kind.is_socket() => "it is a socket, which cannot be opened as a file",
            Ok(kind) if kind.is_char_device() && path == Path::new("/dev/tty") => {
                "this process has no controlling terminal for /dev/tty to name"
            }
            Ok(kind) if kind.is_char_device() || kind.is_block_device() => "a device with nothing behind it",
            _ => return e,
        };
        std::io::Error::other(why)
    })
}

/// Where the dynamic loader would look for `libcuda.so.1`, in its order, less the files that
/// are `shim` itself (the links `peerpool sim` makes to it): `LD_LIBRARY_PATH`, the directories
/// of `/etc/ld.so.conf` (and the files it includes), then the system's library directories.
/// Only existing files are listed; the caller still refuses one that turns out to be a shim.
pub fn libcuda_candidates(ld_library_path: Option<&str>, shim: &Path) -> Vec<PathBuf> {
    let same_file = |a: &Path, b: &Path| {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
            _ => false,
        }
    };
    let mut dirs: Vec<PathBuf> = ld_library_path.unwrap_or_default().split(':').map(PathBuf::from).collect();
    dirs.extend(ld_so_conf(Path::new("/etc/ld.so.conf"), 0));
    dirs.extend(
        ["/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"]
            .map(PathBuf::from),
    );
    let mut found: Vec<PathBuf> = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_absolute()) {
        let file = dir.join("libcuda.so.1");
        if file.is_file() && !same_file(&file, shim) && !found.iter().any(|f| same_file(f, &file)) {
            found.push(file);
        }
    }
    found
}

/// The directories an `ld.so.conf` names, its `include` globs (`dir/*.conf`) followed to a
/// small depth; anything unreadable is skipped, as the loader's cache would have.
fn ld_so_conf(file: &Path, depth: usize) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(file) else { return Vec::new() };
    let mut dirs = Vec::new();
    for line in text.lines().map(|l| l.split('#').next().unwrap_or_default().trim()) {
        match line.strip_prefix("include") {
            Some(pattern) if depth < 3 => {
                let pattern = Path::new(pattern.trim());
                let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else { continue };
                let suffix = name.to_string_lossy().trim_start_matches('*').to_string();
                let Ok(entries) = std::fs::read_dir(dir) else { continue };
                let mut files: Vec<PathBuf> =
                    entries.flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(&suffix)).collect();
                files.sort();
                for included in files {
                    dirs.extend(ld_so_conf(&included, depth + 1));
                }
            }
            _ if line.starts_with('/') => dirs.push(PathBuf::from(line)),
            _ => {}
        }
    }
    dirs
}

/// The topology `value` names ([`resolve_topology`]); a mistake names the variable it came from.
fn load_topology(name: &str, value: &str) -> Result<Topology, String> {
    resolve_topology(value).map_err(|e| format!("{name}={}: {e}", echo(value)))
}

/// A catalog stem (`four_gpu_islands`), or a topology file: a name with a `/`, ending in
/// `.toml`, or naming an existing file. Errors say which, and list the catalog for a stem.
pub fn resolve_topology(name: &str) -> Result<Topology, String> {
    let path = Path::new(name);
    if name.contains('/') || name.ends_with(".toml") || path.is_file() {
        crate::input::readable(path).map_err(|why| format!("topology file {} {why}", echo(name)))?;
        return Topology::load(path).map_err(|e| e.to_string());
    }
    catalog_topology(name).map_err(|e| {
        let stems: Vec<&str> = catalog().iter().map(|c| c.stem()).collect();
        format!("{e} (catalog: {}; a file needs a path such as ./{}.toml)", stems.join(", "), echo(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::fs::OpenOptionsExt;

    fn read_from(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        read(|k| Ok(map.get(k).cloned()))
    }

    fn topology(config: &Config) -> &Topology {
        match &config.target {
            Target::Simulated(topology) => topology,
            other => panic!("not simulated: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_the_lent_pair_without_faults() {
        let config = read_from(&[]).unwrap();
        assert_eq!(topology(&config).device_count(), 2);
        assert!(config.plan.rules.is_empty() && config.trace.is_none() && config.plan.seed == 0);
    }

    #[test]
    fn each_setting_is_read_and_each_mistake_named() {
        let config =
            read_from(&[(TOPOLOGY, "eight_gpu_nvswitch"), (FAULTS, "cuMemAlloc@2=OUT_OF_MEMORY"), (SEED, "7")]);
        let config = config.unwrap();
        assert_eq!((topology(&config).device_count(), config.plan.rules.len(), config.plan.seed), (8, 1, 7));
        for (pairs, says) in [
            (vec![(TOPOLOGY, "no_such_machine")], "no_such_machine"),
            (vec![(TOPOLOGY, "/nowhere/machine.toml")], "topology file /nowhere/machine.toml does not exist"),
            (vec![(FAULTS, "cuMemAlloc=NOT_A_CODE")], "PEERPOOL_SIM_FAULTS"),
            (vec![(TRACE, "/nowhere/at/all/trace.txt")], "cannot open"),
            (vec![(SEED, "many")], "not a number"),
            (vec![(BACKEND, "both")], "neither sim nor real"),
            (vec![(LIBCUDA, "/usr/lib/libcuda.so.1")], "only read with"),
            (vec![(BACKEND, "real"), (TOPOLOGY, "one_gpu")], "no meaning"),
            (vec![(BACKEND, "real"), (LIBCUDA, "libcuda.so.1")], "not an absolute path"),
            (vec![(TIMING, "/nowhere/timing.json")], "PEERPOOL_SIM_TIMING"),
            (vec![(BACKEND, "real"), (TIMING, "/nowhere/timing.json")], "real GPUs take real time"),
        ] {
            let error = read_from(&pairs).err().expect("refused");
            assert!(error.contains(says), "{pairs:?}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
    }

    /// One topology setting under three names: the deprecated ones are read as it, and two
    /// that disagree are refused, whichever they are.
    #[test]
    fn the_deprecated_topology_names_are_read_and_may_not_disagree() {
        let [hardware, sim] = TOPOLOGY_ALIASES;
        for name in [TOPOLOGY, hardware, sim] {
            let config = read_from(&[(name, "four_gpu_islands")]).unwrap();
            assert_eq!(topology(&config).device_count(), 4, "{name}");
        }
        let same = read_from(&[(TOPOLOGY, "one_gpu"), (hardware, " one_gpu "), (sim, "")]).unwrap();
        assert_eq!(topology(&same).device_count(), 1);
        for pairs in [[(TOPOLOGY, "one_gpu"), (sim, "four_gpu_islands")], [(hardware, "one_gpu"), (sim, "real")]] {
            let error = read_from(&pairs).err().unwrap_or_default();
            assert!(error.contains("disagree") && error.contains(pairs[1].0), "{pairs:?}: {error}");
        }
        let error = read_from(&[(hardware, "no_such_machine")]).err().unwrap_or_default();
        assert!(error.starts_with("PEERPOOL_HARDWARE=no_such_machine: "), "named as given: {error}");
    }

    /// `real` names no topology: the CUDA driver's GPUs, which the shim simulates by default
    /// (or forwards to with the real backend).
    #[test]
    fn real_is_whatever_the_shim_answers() {
        for name in [TOPOLOGY, TOPOLOGY_ALIASES[0]] {
            assert_eq!(topology(&read_from(&[(name, "real")]).unwrap()).device_count(), 2, "{name}");
        }
        assert!(matches!(read_from(&[(TOPOLOGY, "real"), (BACKEND, "real")]).unwrap().target, Target::Real(None)));
    }

    /// A value that is not UTF-8 is an error naming its variable, never unset: every setting.
    #[test]
    fn a_setting_that_is_not_utf8_is_refused_not_taken_as_unset() {
        for unreadable in VARIABLES.into_iter().chain([crate::visible::VISIBLE]) {
            let error = read(|k| match k == unreadable {
                true => Err(format!("{k} is set to a value that is not UTF-8")),
                false => Ok(None),
            })
            .err()
            .unwrap_or_default();
            assert!(error.contains(unreadable) && error.contains("not UTF-8"), "{unreadable}: {error}");
        }
    }

    /// What a setting holds reaches the terminal (the shim prints these) escaped and cut.
    #[test]
    fn a_refused_setting_is_echoed_escaped_and_cut() {
        let hostile = format!("\u{1b}[2J\u{1b}]0;pwned\u{7}{}", "x".repeat(1 << 20));
        for name in [TOPOLOGY, FAULTS, SEED, BACKEND, TIMING, TRACE] {
            let value = match name {
                TRACE | TIMING => format!("/nowhere/{hostile}"),
                _ => hostile.clone(),
            };
            let error = read_from(&[(name, &value)]).err().unwrap_or_default();
            assert!(!error.is_empty(), "{name}: refused");
            assert!(!error.chars().any(char::is_control), "{name}: {:?}", &error[..error.len().min(300)]);
            assert!(error.len() < 1024, "{name}: {} bytes", error.len());
        }
        let error = read_from(&[(BACKEND, "real"), (LIBCUDA, &hostile)]).err().unwrap_or_default();
        assert!(!error.chars().any(char::is_control) && error.len() < 1024, "{LIBCUDA}");
    }

    #[test]
    fn a_timing_model_is_read_from_its_file() {
        let file = std::env::temp_dir().join(format!("peerpool-env-timing-{}.json", std::process::id()));
        std::fs::write(&file, r#"{"machine": "test", "init_us": 5.0}"#).unwrap();
        let config = read_from(&[(TIMING, file.to_str().unwrap())]);
        std::fs::write(&file, r#"{"init_microseconds": 5.0}"#).unwrap();
        let bad = read_from(&[(TIMING, file.to_str().unwrap())]).err().unwrap_or_default();
        std::fs::remove_file(&file).unwrap();
        let timing = config.unwrap().timing.expect("read");
        assert_eq!((timing.machine.as_str(), timing.init_us), ("test", 5.0));
        assert!(bad.contains("init_microseconds"), "{bad}");
        assert!(read_from(&[]).unwrap().timing.is_none(), "the built-in model by default");
    }

    #[test]
    fn a_trace_fifo_without_a_reader_is_refused_not_waited_for() {
        use rustix::fs::{CWD, FileType, Mode};
        let fifo = std::env::temp_dir().join(format!("peerpool-env-fifo-{}", std::process::id()));
        rustix::fs::mknodat(CWD, &fifo, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
        let refused = read_from(&[(TRACE, fifo.to_str().unwrap())]).err().unwrap_or_default();
        // With a reader it opens, and the file it gives blocks as a trace should.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&fifo)
            .unwrap();
        let writer = open_trace(fifo.to_str().unwrap()).unwrap();
        let blocking = !rustix::fs::fcntl_getfl(&writer).unwrap().contains(rustix::fs::OFlags::NONBLOCK);
        drop((reader, writer));
        std::fs::remove_file(&fifo).unwrap();
        assert!(refused.contains("a FIFO with no reader"), "{refused}");
        assert!(blocking, "writes to the trace block");
    }

    /// A socket cannot be opened as a file at all; it was called "a FIFO with no reader".
    #[test]
    fn a_trace_socket_is_named_a_socket() {
        let dir = std::env::temp_dir().join(format!("peerpool-env-socket-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("trace");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let refused = read_from(&[(TRACE, socket.to_str().unwrap())]).err().unwrap_or_default();
        drop(listener);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(refused.contains("is a socket") && !refused.contains("FIFO"), "{refused}");
    }

    #[test]
    fn the_real_backend_takes_a_named_library_or_none() {
        let named = read_from(&[(BACKEND, "real"), (LIBCUDA, "/opt/nvidia/libcuda.so.1"), (FAULTS, "cuInit=UNKNOWN")]);
        let named = named.unwrap();
        assert!(matches!(&named.target, Target::Real(Some(p)) if p == Path::new("/opt/nvidia/libcuda.so.1")));
        assert_eq!(named.plan.rules.len(), 1, "the rules apply to the real backend too");
        assert!(matches!(read_from(&[(BACKEND, "real")]).unwrap().target, Target::Real(None)));
    }

    #[test]
    fn the_search_skips_the_shim_and_its_links_and_keeps_the_loader_order() {
        let dir = std::env::temp_dir().join(format!("peerpool-env-search-{}", std::process::id()));
        let (shim_dir, a, b) = (dir.join("shim"), dir.join("a"), dir.join("b"));
        for d in [&shim_dir, &a, &b] {
            std::fs::create_dir_all(d).unwrap();
        }
        let shim = shim_dir.join("libpeerpool_shim.so");
        std::fs::write(&shim, b"shim").unwrap();
        std::os::unix::fs::symlink(&shim, shim_dir.join("libcuda.so.1")).unwrap();
        std::fs::write(a.join("libcuda.so.1"), b"first").unwrap();
        std::fs::write(b.join("libcuda.so.1"), b"second").unwrap();
        let path = format!("{}:relative/dir:{}:{}", shim_dir.display(), a.display(), b.display());
        let found = libcuda_candidates(Some(&path), &shim);
        assert_eq!(found[..2], [a.join("libcuda.so.1"), b.join("libcuda.so.1")]);
        assert!(!found.iter().any(|f| f.starts_with(&shim_dir)), "{found:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
