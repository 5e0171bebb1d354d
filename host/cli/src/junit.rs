//! JUnit XML (through quick-junit) of a run report: one test suite per binary, one test case
//! per trial, every skipped trial with its reason (nextest's own JUnit leaves ignored trials
//! out), and the hardware and build as properties, so a CI dashboard shows what ran where.

use peerpool::report::{Report, Status};
use quick_junit::{NonSuccessKind, Property, Report as JUnit, TestCase, TestCaseStatus, TestSuite};
use std::collections::BTreeMap;
use std::time::Duration;

/// What a planned trial that never reported says in JUnit.
const NOT_RUN: &str = "not run: no result was recorded (filtered out, or the run stopped first)";

/// The hardware and build of `report`, as `(name, value)` properties.
pub fn properties(report: &Report) -> Vec<(String, String)> {
    let h = &report.hardware;
    let mut out = vec![("gpus".to_string(), h.devices.len().to_string())];
    if !h.driver.is_empty() {
        out.insert(0, ("driver".into(), h.driver.clone()));
    }
    if let Some(missing) = &h.missing {
        out.push(("hardware.missing".into(), missing.clone()));
    }
    for d in &h.devices {
        let value = format!(
            "{}, compute capability {}, {} MiB, pool handle types {}",
            d.name, d.compute_capability, d.memory_mib, d.pool_handle_types
        );
        out.push((format!("gpu{}", d.ordinal), value));
    }
    for l in &h.links {
        let access = if l.peer_access { "peer access" } else { "no peer access" };
        let atomics = if l.native_atomics { "native atomics" } else { "no native atomics" };
        let mut value = format!("{access}, {atomics}, performance rank {}", l.performance_rank);
        if let Some(link) = &l.link {
            value += &format!(", link {link}");
        }
        out.push((format!("link.gpu{}->gpu{}", l.from, l.to), value));
    }
    let b = &report.build;
    out.push(("peerpool".into(), b.peerpool.clone()));
    out.push(("ptx_origin".into(), b.ptx_origin.clone()));
    if let Some(commit) = &b.commit {
        out.push(("commit".into(), commit.clone()));
    }
    out
}

/// The report as JUnit XML, named `name`.
pub fn render(report: &Report, name: &str) -> Result<String, String> {
    let properties = properties(report);
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    for trial in &report.trials {
        let suite = suites.entry(trial.binary.as_str()).or_insert_with(|| {
            let mut suite = TestSuite::new(trial.binary.as_str());
            suite.add_properties(properties.iter().map(|(k, v)| Property::new(k.as_str(), v.as_str())));
            suite
        });
        let status = match trial.status {
            Status::Passed => TestCaseStatus::success(),
            Status::Failed => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status.set_message(trial.detail.as_deref().unwrap_or("failed"));
                status
            }
            Status::Skipped => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(trial.detail.as_deref().unwrap_or("skipped"));
                status
            }
            Status::NotRun => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(NOT_RUN);
                status
            }
        };
        let mut case = TestCase::new(trial.name.as_str(), status);
        case.set_classname(trial.binary.as_str());
        if let Some(ms) = trial.millis {
            case.set_time(Duration::from_millis(ms));
        }
        if trial.status == Status::Passed
            && let Some(note) = &trial.detail
        {
            case.set_system_out(note.as_str());
        }
        suite.add_test_case(case);
    }
    let mut junit = JUnit::new(name);
    junit.add_test_suites(suites.into_values());
    junit.to_string().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use peerpool::report::{BuildRecord, HardwareRecord, TrialRecord};

    fn trial(name: &str, binary: &str, status: Status, detail: Option<&str>) -> TrialRecord {
        TrialRecord {
            name: name.into(),
            binary: binary.into(),
            status,
            detail: detail.map(Into::into),
            millis: Some(12),
        }
    }

    #[test]
    fn every_trial_is_a_case_and_skips_keep_their_reason() {
        let report = Report {
            hardware: HardwareRecord::missing("no CUDA driver"),
            build: BuildRecord::current(),
            trials: vec![
                trial("a::gpu0->gpu1", "grant", Status::Passed, None),
                trial("b::gpu0->gpu1", "grant", Status::Failed, Some("bytes <wrong> & late")),
                trial("c::gpu0->gpu1", "grant", Status::Skipped, Some("no CUDA driver")),
                trial("d::all_gpus", "model_hw", Status::NotRun, None),
            ],
        };
        let xml = render(&report, "peerpool").unwrap();
        assert!(xml.contains(r#"<testsuite name="grant" tests="3" skipped="1" errors="0" failures="1""#), "{xml}");
        assert!(xml.contains(r#"<testcase name="c::gpu0-&gt;gpu1" classname="grant""#), "{xml}");
        assert!(xml.contains(r#"<skipped message="no CUDA driver"/>"#), "{xml}");
        assert!(xml.contains(r#"<failure message="bytes &lt;wrong&gt; &amp; late""#), "{xml}");
        assert!(xml.contains(r#"<property name="hardware.missing" value="no CUDA driver"/>"#), "{xml}");
        assert!(xml.contains(&format!(r#"<skipped message="{NOT_RUN}"/>"#)), "{xml}");
        assert_eq!(xml.matches("<skipped").count(), 2);
    }
}
