//! A copy of the command anywhere finds the report directory of its cargo target directory as
//! cargo marks it (the `CACHEDIR.TAG` in it, or an absolute `CARGO_TARGET_DIR`), as test
//! binaries on peerpool-fixtures do when they record a run: `peerpool report` merges what
//! they wrote there with no directory named.

mod support;

use peerpool::report::{BuildRecord, HardwareRecord, Plan, Status, TrialRecord};
use std::path::Path;
use std::process::{Command, Output};

const CARGO_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
    # This file is a cache directory tag created by cargo.\n";

/// A run's plan, as a suite writes it, in `target`'s report directory.
fn recorded(target: &Path) {
    let trial = TrialRecord {
        name: "t::gpu0->gpu1".into(),
        binary: "suite".into(),
        status: Status::Skipped,
        detail: Some("no CUDA driver".into()),
        millis: None,
    };
    let plan = Plan {
        hardware: HardwareRecord::missing("no CUDA driver"),
        build: BuildRecord::current(),
        trials: vec![trial],
    };
    plan.write(&target.join("peerpool-report"), "suite").unwrap();
}

/// `peerpool report` from `copy`, with no report directory named and `env` set.
fn report(copy: &Path, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(copy);
    command
        .arg("report")
        .env_remove("PEERPOOL_REPORT_DIR")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("CARGO_TARGET_DIR");
    command.envs(env.iter().copied());
    support::output_of_copy(&mut command, copy)
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn a_copy_anywhere_reads_the_report_its_target_directory_holds() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("builds/any-name");
    let copy = target.join("release/peerpool");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(support::binary(), &copy).unwrap();
    std::fs::write(target.join("CACHEDIR.TAG"), CARGO_TAG).unwrap();
    recorded(&target);
    let output = report(&copy, &[]);
    assert_eq!(output.status.code(), Some(3), "one trial, skipped: nothing was checked; {}", text(&output));
    assert!(text(&output).contains("0 passed, 0 failed, 1 skipped"), "{}", text(&output));
    assert!(target.join("peerpool-report/junit.xml").is_file(), "{}", text(&output));

    // An absolute CARGO_TARGET_DIR names the target directory wherever the binary is.
    let named = dir.path().join("named");
    recorded(&named);
    let output = report(&copy, &[("CARGO_TARGET_DIR", &named)]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    assert!(named.join("peerpool-report/junit.xml").is_file(), "{}", text(&output));
}
