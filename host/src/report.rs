//! Run reports: the tested hardware, the build, and each trial's result or skip reason, as
//! JSON (for machines) and Markdown (for people): the record seed 000 asks for.
//!
//! A test binary writes a *plan* (every trial it built, with skip reasons) and one *result*
//! file per trial it ran into a report directory; under cargo-nextest each trial runs in its
//! own process, so results arrive as separate files. [`Report::collect`] merges a directory.

use crate::facts::{self, Facts};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

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
    /// The link as `nvidia-smi topo -m` names it (`NV18`, `PIX`, `SYS`...), when available.
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
    /// From the driver's facts, with link names from `nvidia-smi topo -m` where it runs.
    pub fn from_facts(facts: &Facts) -> HardwareRecord {
        let topo = nvidia_smi_links();
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
                    link: topo.as_ref().and_then(|t| t.get(p.from)?.get(p.to).cloned()),
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
        let commit = ["PEERPOOL_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA"].iter().find_map(|v| std::env::var(v).ok());
        BuildRecord {
            peerpool: env!("CARGO_PKG_VERSION").into(),
            ptx_origin: format!("{:?}", crate::kernels::PTX_ORIGIN),
            ptx_rustc: crate::kernels::PTX_RUSTC.into(),
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

/// The report directory: `$PEERPOOL_REPORT_DIR`, else `peerpool-report/` in the cargo target
/// directory holding the running binary, else in the system temp directory.
pub fn report_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(REPORT_DIR_ENV) {
        return dir.into();
    }
    let exe = std::env::current_exe().ok();
    let target = exe.as_deref().and_then(|e| e.ancestors().find(|a| a.file_name().is_some_and(|n| n == "target")));
    target.map_or_else(std::env::temp_dir, Path::to_path_buf).join("peerpool-report")
}

/// A file-name-safe form of a trial or binary name.
pub fn file_stem(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '.' }).collect()
}

impl Plan {
    /// Writes `<dir>/<binary>.plan.json`.
    pub fn write(&self, dir: &Path, binary: &str) -> std::io::Result<()> {
        fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        fs::write(dir.join(format!("{}.plan.json", file_stem(binary))), json)
    }
}

impl TrialRecord {
    /// Writes `<dir>/<binary>.<trial>.result.json`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let name = format!("{}.{}.result.json", file_stem(&self.binary), file_stem(&self.name));
        fs::write(dir.join(name), json)
    }
}

impl Report {
    /// Merges every plan and result in `dir`: results override their trial's planned state.
    pub fn collect(dir: &Path) -> std::io::Result<Report> {
        let mut plans: Vec<Plan> = Vec::new();
        let mut results: Vec<TrialRecord> = Vec::new();
        let mut entries: Vec<_> = fs::read_dir(dir)?.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
            let text = fs::read_to_string(&path)?;
            if name.ends_with(".plan.json") {
                plans.push(serde_json::from_str(&text).map_err(std::io::Error::other)?);
            } else if name.ends_with(".result.json") {
                results.push(serde_json::from_str(&text).map_err(std::io::Error::other)?);
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
        let mut trials: Vec<TrialRecord> = plans.into_iter().flat_map(|p| p.trials).collect();
        for result in results {
            match trials.iter_mut().find(|t| t.binary == result.binary && t.name == result.name) {
                Some(t) => *t = result,
                None => trials.push(result),
            }
        }
        trials.sort_by(|a, b| (&a.binary, &a.name).cmp(&(&b.binary, &b.name)));
        Ok(Report { hardware, build, trials })
    }

    /// How many trials ended with `status`.
    pub fn count(&self, status: Status) -> usize {
        self.trials.iter().filter(|t| t.status == status).count()
    }

    /// The Markdown summary.
    pub fn to_markdown(&self) -> String {
        let mut md = String::from("# peerpool run report\n\n## Hardware\n");
        let h = &self.hardware;
        if let Some(why) = &h.missing {
            md += &format!("No GPUs: {why}.\n");
        }
        if !h.driver.is_empty() {
            md += &format!("Driver: {}\n\n", h.driver);
        }
        if !h.devices.is_empty() {
            md += "| GPU | name | compute capability | memory (MiB) | pool handle types |\n| --- | --- | --- | --- | --- |\n";
            for d in &h.devices {
                md += &format!(
                    "| {} | {} | {} | {} | {} |\n",
                    d.ordinal, d.name, d.compute_capability, d.memory_mib, d.pool_handle_types
                );
            }
            md += "\n| from -> to | link | peer access | native atomics | rank |\n| --- | --- | --- | --- | --- |\n";
            for l in &h.links {
                let link = l.link.as_deref().unwrap_or("unknown");
                md += &format!(
                    "| gpu{} -> gpu{} | {} | {} | {} | {} |\n",
                    l.from, l.to, link, l.peer_access, l.native_atomics, l.performance_rank
                );
            }
        }
        let b = &self.build;
        md += &format!(
            "\n## Build\npeerpool {}, PTX {} ({}), commit {}\n\n",
            b.peerpool,
            b.ptx_origin,
            if b.ptx_rustc.is_empty() { "committed copy" } else { &b.ptx_rustc },
            b.commit.as_deref().unwrap_or("unknown")
        );
        md += &format!(
            "## Trials\n{} passed, {} failed, {} skipped, {} not run\n\n| status | trial | detail |\n| --- | --- | --- |\n",
            self.count(Status::Passed),
            self.count(Status::Failed),
            self.count(Status::Skipped),
            self.count(Status::NotRun)
        );
        for t in &self.trials {
            let detail = t.detail.as_deref().unwrap_or("").replace('|', "\\|").replace('\n', " ");
            md += &format!("| {:?} | `{}` {} | {} |\n", t.status, t.binary, t.name, detail);
        }
        md
    }
}

/// The link matrix from `nvidia-smi topo -m` (`[from][to]`), when nvidia-smi runs here.
pub fn nvidia_smi_links() -> Option<Vec<Vec<String>>> {
    let out = std::process::Command::new("nvidia-smi").args(["topo", "-m"]).output().ok()?;
    parse_topo(&String::from_utf8_lossy(&out.stdout))
}

/// Parses `nvidia-smi topo -m`: rows starting `GPU<n>`, the first columns being GPUs.
pub fn parse_topo(text: &str) -> Option<Vec<Vec<String>>> {
    let clean: String = text.chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').collect();
    let clean = clean.replace("[4m", "").replace("[0m", "");
    let rows: Vec<Vec<String>> = clean
        .lines()
        // Matrix rows start at column 0 with `GPU<n>`; the header row starts with a tab.
        .filter(|l| l.starts_with("GPU"))
        .map(|l| l.split_whitespace().skip(1).map(str::to_string).collect())
        .collect();
    let n = rows.len();
    if n == 0 || rows.iter().any(|r| r.len() < n) {
        return None;
    }
    Some(rows.into_iter().map(|r| r.into_iter().take(n).collect()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_h200_topology() {
        let text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tNV18\t0-31\t0\t\tN/A\nGPU1\tNV18\t X \t0-31\t0\t\tN/A\n\nLegend:\n";
        let m = parse_topo(text).expect("parses");
        assert_eq!(m, vec![vec!["X".to_string(), "NV18".into()], vec!["NV18".into(), "X".into()]]);
        assert!(parse_topo("no gpus here").is_none());
        let one = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-31\t0\n";
        assert_eq!(parse_topo(one), Some(vec![vec!["X".to_string()]]));
    }

    #[test]
    fn results_override_the_plan_and_render() {
        let dir = std::env::temp_dir().join(format!("peerpool-report-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
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
        fs::remove_dir_all(&dir).unwrap();
    }
}
