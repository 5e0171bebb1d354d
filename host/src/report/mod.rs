//! Run reports: the tested hardware, the build, and each trial's result or skip reason, as
//! JSON (for machines) and Markdown (for people): the record seed 000 asks for.
//!
//! A test binary writes a *plan* (every trial it built, with skip reasons) and one *result*
//! file per trial it ran into a report directory; under cargo-nextest each trial runs in its
//! own process, so results arrive as separate files. [`Report::collect`] merges a directory.
//!
//! The directory is held to [`OwnedDir`]'s rules (ours, not writable by others, no links
//! followed, atomic writes), and only regular files with the expected names, at most
//! [`MAX_FILE_BYTES`] each, are read: another user can neither plant results nor turn a write
//! against a file of ours.

mod markdown;

use crate::facts::{self, Facts};
use crate::owned_dir::{DirError, OwnedDir};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use markdown::escape;

/// Environment variable naming the report directory.
pub const REPORT_DIR_ENV: &str = "PEERPOOL_REPORT_DIR";

/// One GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRecord {
    /// Ordinal.
    pub ordinal: usize,
    /// Name, e.g. "NVIDIA H200".
    pub name: String,
    /// "9.0".
    pub compute_capability: String,
    /// Total memory in MiB.
    pub memory_mib: u64,
    /// Pool handle types, e.g. "posix-fd|fabric".
    pub pool_handle_types: String,
}

/// One ordered pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// Accessing device.
    pub from: usize,
    /// Owning device.
    pub to: usize,
    /// `cuDeviceCanAccessPeer`.
    pub peer_access: bool,
    /// Native atomics.
    pub native_atomics: bool,
    /// Performance rank.
    pub performance_rank: i32,
    /// The link as NVML names it (`NV18`, `PIX`, `SYS`...; [`crate::links`]), when available.
    pub link: Option<String>,
}

/// The machine the trials ran on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardwareRecord {
    /// The driver, described (real or simulated).
    pub driver: String,
    /// Each GPU.
    pub devices: Vec<DeviceRecord>,
    /// Each ordered pair.
    pub links: Vec<LinkRecord>,
    /// Why there is no hardware, when there is none.
    pub missing: Option<String>,
}

impl HardwareRecord {
    /// From the driver's facts (link names from NVML, where the facts have them).
    pub fn from_facts(facts: &Facts) -> HardwareRecord {
        HardwareRecord {
            driver: facts.driver.clone(),
            devices: facts
                .devices
                .iter()
                .map(|d| DeviceRecord {
                    ordinal: d.ordinal,
                    name: d.name.clone(),
                    compute_capability: format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
                    memory_mib: d.total_memory >> 20,
                    pool_handle_types: facts::handle_types(d.pool_handle_types),
                })
                .collect(),
            links: facts
                .peers
                .iter()
                .map(|p| LinkRecord {
                    from: p.from,
                    to: p.to,
                    peer_access: p.can_access,
                    native_atomics: p.native_atomics,
                    performance_rank: p.performance_rank,
                    link: p.link.clone(),
                })
                .collect(),
            missing: None,
        }
    }

    /// No hardware, for `reason`.
    pub fn missing(reason: &str) -> HardwareRecord {
        HardwareRecord { missing: Some(reason.into()), ..HardwareRecord::default() }
    }
}

/// The build that ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// peerpool's version.
    pub peerpool: String,
    /// Whether the embedded PTX was built in this build or is the committed copy.
    pub ptx_origin: String,
    /// The rustc that built the PTX.
    pub ptx_rustc: String,
    /// The source commit, from `PEERPOOL_COMMIT`, `GITHUB_SHA` or `CI_COMMIT_SHA` at run time.
    pub commit: Option<String>,
}

impl BuildRecord {
    /// This build.
    pub fn current() -> BuildRecord {
        // A value that is not UTF-8 is recorded as far as it reads, not dropped.
        let read = |v: &&str| crate::env::var(v).unwrap_or_else(|e| Some(e.lossy()));
        let commit = ["PEERPOOL_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA"].iter().find_map(read);
        BuildRecord {
            peerpool: env!("CARGO_PKG_VERSION").into(),
            ptx_origin: format!("{:?}", peerpool_kernels::PTX_ORIGIN),
            ptx_rustc: peerpool_kernels::PTX_RUSTC.into(),
            commit,
        }
    }
}

/// How a trial ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It ran and passed.
    Passed,
    /// It ran and failed.
    Failed,
    /// Its needs were not met; it did not run.
    Skipped,
    /// Planned, runnable, but no result arrived (filtered out, or the run was cut short).
    NotRun,
}

/// One trial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// The trial's name, e.g. `grant::scope_is_one_pool::gpu0->gpu1`.
    pub name: String,
    /// The binary it belongs to.
    pub binary: String,
    /// How it ended.
    pub status: Status,
    /// The skip reason or failure message.
    pub detail: Option<String>,
    /// Wall time in milliseconds, when it ran.
    pub millis: Option<u64>,
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The hardware.
    pub hardware: HardwareRecord,
    /// The build.
    pub build: BuildRecord,
    /// Every trial, sorted by binary and name.
    pub trials: Vec<TrialRecord>,
}

/// What a test binary writes before running: its hardware and every trial it built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The hardware.
    pub hardware: HardwareRecord,
    /// The build.
    pub build: BuildRecord,
    /// Every trial, skipped ones with their reason, runnable ones `NotRun`.
    pub trials: Vec<TrialRecord>,
}

/// The largest plan or result file read (a plan of a thousand trials is about 300 KiB).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// Why a report directory could not be found, read or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// The directory or one of its files was refused (see [`OwnedDir`]).
    #[error(transparent)]
    Dir(#[from] DirError),
    /// A plan or result file that is not one.
    #[error("{}: not a peerpool report file: {}", crate::text::path(path), crate::text::clipped(message, 600))]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        message: String,
    },
    /// No directory was named and none of ours could be found.
    #[error(
        "no report directory: set {REPORT_DIR_ENV} (this binary is not in a cargo target directory and \
         $XDG_RUNTIME_DIR is not set)"
    )]
    NoDirectory,
}

/// The report directory: `$PEERPOOL_REPORT_DIR`, else `peerpool-report/` in the cargo target
/// directory of the running binary ([`cargo_target_dir`]), else in the user's runtime
/// directory (`$XDG_RUNTIME_DIR`, private to the user). Never a shared directory such as
/// `/tmp`, where another user could create it first: [`ReportError::NoDirectory`] instead.
pub fn report_dir() -> Result<PathBuf, ReportError> {
    if let Some(dir) = std::env::var_os(REPORT_DIR_ENV) {
        return Ok(dir.into());
    }
    // Not to run a child (that is `crate::child`'s): the cargo target directory this binary
    // was built in, found from where it runs (an archived test's differs from the build's).
    let exe = std::env::current_exe().ok();
    let target = exe.as_deref().and_then(|e| cargo_target_dir(e, std::env::var_os("CARGO_TARGET_DIR").as_deref()));
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|d| d.is_absolute());
    let base = target.or(runtime).ok_or(ReportError::NoDirectory)?;
    Ok(base.join("peerpool-report"))
}

/// The cargo target directory of a binary at `exe`, as cargo tells it: `CARGO_TARGET_DIR`
/// (`from_env`, the run's value) when it is an absolute path, else the nearest directory above
/// `exe` holding the `CACHEDIR.TAG` cargo writes in every target directory it makes. A relative
/// `CARGO_TARGET_DIR` is left to the tag: cargo resolved it against the directory it started
/// in, and a test runs in its package's directory. A directory merely named `target` is not
/// taken: a binary copied anywhere else must not write into someone's `target`.
pub fn cargo_target_dir(exe: &Path, from_env: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if let Some(dir) = from_env.map(Path::new).filter(|d| d.is_absolute()) {
        return Some(dir.to_path_buf());
    }
    exe.ancestors().skip(1).find(|dir| tagged_by_cargo(dir)).map(Path::to_path_buf)
}

/// Whether `dir` holds cargo's cache-directory tag: the convention's signature first, and
/// cargo named in it (other tools tag their caches with the same signature). Only a directory
/// of ours that others cannot write counts, and the tag is read only as a regular file of ours,
/// without blocking or following a link: a tag planted in a shared directory above the binary
/// (`/tmp`) must not make it the report's home.
fn tagged_by_cargo(dir: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let euid = rustix::process::geteuid().as_raw();
    let ours = |m: &std::fs::Metadata| m.uid() == euid;
    if !std::fs::metadata(dir).is_ok_and(|m| ours(&m) && m.mode() & 0o002 == 0) {
        return false;
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    let Ok(tag) = options.open(dir.join("CACHEDIR.TAG")) else { return false };
    if !tag.metadata().is_ok_and(|m| m.is_file() && ours(&m)) {
        return false;
    }
    let mut head = Vec::new();
    tag.take(512).read_to_end(&mut head).is_ok()
        && head.starts_with(b"Signature: 8a477f597d28d172789f06886806bc55")
        && head.windows(b"by cargo".len()).any(|w| w == b"by cargo")
}

/// A file-name-safe form of a trial or binary name.
pub fn file_stem(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '.' }).collect()
}

impl Plan {
    /// Writes `<dir>/<binary>.plan.json` atomically, creating `dir` (mode 0700) if needed.
    pub fn write(&self, dir: &Path, binary: &str) -> Result<PathBuf, ReportError> {
        let name = format!("{}.plan.json", file_stem(binary));
        let json = to_json(self, dir, &name)?;
        Ok(OwnedDir::create(dir)?.write(&name, json.as_bytes())?)
    }
}

impl TrialRecord {
    /// Writes `<dir>/<binary>.<trial>.result.json` atomically, creating `dir` if needed.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, ReportError> {
        let name = format!("{}.{}.result.json", file_stem(&self.binary), file_stem(&self.name));
        let json = to_json(self, dir, &name)?;
        Ok(OwnedDir::create(dir)?.write(&name, json.as_bytes())?)
    }
}

fn to_json(value: &impl Serialize, dir: &Path, name: &str) -> Result<String, ReportError> {
    serde_json::to_string_pretty(value)
        .map_err(|e| ReportError::Malformed { path: dir.join(name), message: e.to_string() })
}

impl Report {
    /// Merges every plan and result in `dir`: results override their trial's planned state.
    ///
    /// Only `*.plan.json` and `*.result.json` entries are opened, and each must be a regular
    /// file of at most [`MAX_FILE_BYTES`] holding what its name says; anything else under those
    /// names is refused, naming the file. Other entries are not opened.
    pub fn collect(dir: &Path) -> Result<Report, ReportError> {
        Report::collect_in(&OwnedDir::open(dir)?)
    }

    /// [`Report::collect`] on a directory already open.
    pub fn collect_in(dir: &OwnedDir) -> Result<Report, ReportError> {
        let mut plans: Vec<Plan> = Vec::new();
        let mut results: Vec<TrialRecord> = Vec::new();
        for name in dir.names()? {
            let (is_plan, is_result) = (name.ends_with(".plan.json"), name.ends_with(".result.json"));
            if !is_plan && !is_result {
                continue;
            }
            let bytes = dir.read(&name, MAX_FILE_BYTES)?;
            let malformed =
                |e: serde_json::Error| ReportError::Malformed { path: dir.path().join(&name), message: e.to_string() };
            if is_plan {
                plans.push(serde_json::from_slice(&bytes).map_err(malformed)?);
            } else {
                results.push(serde_json::from_slice(&bytes).map_err(malformed)?);
            }
        }
        // Suites that run on a simulator on purpose (stand-ins) write simulated hardware: the
        // report names the machine the real-hardware suites saw, or why they saw none.
        let simulated = |h: &HardwareRecord| h.driver.starts_with("simulated");
        let hardware = plans
            .iter()
            .map(|p| &p.hardware)
            .max_by_key(|h| (!simulated(h), h.devices.len()))
            .cloned()
            .unwrap_or_else(|| HardwareRecord::missing("no plan found"));
        let build = plans.first().map_or_else(BuildRecord::current, |p| p.build.clone());
        // Keyed by (binary, name): a later record of a trial replaces the earlier one.
        let mut trials: BTreeMap<(String, String), TrialRecord> = BTreeMap::new();
        for trial in plans.into_iter().flat_map(|p| p.trials).chain(results) {
            trials.insert((trial.binary.clone(), trial.name.clone()), trial);
        }
        Ok(Report { hardware, build, trials: trials.into_values().collect() })
    }

    /// How many trials ended with `status`.
    pub fn count(&self, status: Status) -> usize {
        self.trials.iter().filter(|t| t.status == status).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_override_the_plan_and_render() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("reports");
        let trial = |name: &str, status, detail: Option<&str>| TrialRecord {
            name: name.into(),
            binary: "grant".into(),
            status,
            detail: detail.map(str::to_string),
            millis: None,
        };
        let plan = Plan {
            hardware: HardwareRecord::missing("no CUDA driver"),
            build: BuildRecord::current(),
            trials: vec![
                trial("a::gpu0->gpu1", Status::NotRun, None),
                trial("b::gpu0->gpu1", Status::Skipped, Some("needs 2 GPUs")),
            ],
        };
        plan.write(&dir, "grant").unwrap();
        trial("a::gpu0->gpu1", Status::Failed, Some("wrong | bytes")).write(&dir).unwrap();
        let report = Report::collect(&dir).unwrap();
        assert_eq!((report.count(Status::Failed), report.count(Status::Skipped)), (1, 1));
        let md = report.to_markdown();
        assert!(md.contains("No GPUs: no CUDA driver."), "{md}");
        assert!(md.contains("wrong \\| bytes"), "{md}");
        assert!(md.contains("needs 2 GPUs"), "{md}");
    }
}
