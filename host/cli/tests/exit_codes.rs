//! The built `peerpool` binary exits as its `--help` table says: 0 success, 1 a failure
//! found, 2 bad input (before any work), 3 nothing checked, 65 a program carrying NVIDIA's CUDA
//! runtime statically under `peerpool sim`, 69 fewer GPUs than required.

mod support;

use libtest_mimic::{Arguments, Trial};
use peerpool::child::{ChildResult, ROLE_ENV};
use peerpool::report::{BuildRecord, HardwareRecord, Plan, Status, TrialRecord};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};
use std::time::{Duration, Instant};

/// The command with `args`, its hardware settings cleared and then `env` set.
fn peerpool_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = support::command();
    command.args(args);
    command.envs(env.iter().copied()).output().expect("the command runs")
}

/// Fewer GPUs than required: not nextest's 4 (no tests run).
const GPUS_REQUIRED: i32 = 69;

fn peerpool(args: &[&str]) -> Output {
    peerpool_with(args, &[])
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// `check` on `topology` into a fresh `--out` directory.
fn check(topology: Option<&str>, out: &Path) -> Output {
    let mut args = vec!["check", "--quiet", "--out", out.to_str().unwrap()];
    if let Some(t) = topology {
        args.extend(["--topology", t]);
    }
    peerpool(&args)
}

fn no_driver() -> bool {
    peerpool::System::open().is_err()
}

fn topology_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("topology.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn help_shows_the_table() {
    let output = peerpool(&["--help"]);
    assert_eq!(code(&output), 0);
    let help = text(&output);
    for line in [
        "Exit codes",
        "0  success",
        "1  a failure",
        "2  bad input",
        "3  nothing was checked",
        "65  peerpool sim: the program carries NVIDIA's CUDA runtime statically",
        "69  fewer GPUs",
    ] {
        assert!(help.contains(line), "{line}: {help}");
    }
    assert_eq!(code(&peerpool(&["frobnicate"])), 2, "usage errors are bad input");
    assert_eq!(code(&peerpool(&["bench", "--repeats", "0"])), 2);
}

fn check_exits_by_what_it_found() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let ok = check(Some("four_gpu_islands"), &out);
    assert_eq!(code(&ok), 0, "{}", text(&ok));
    assert!(out.join("check.json").is_file() && out.join("check.md").is_file());
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"<testcase name="check::grant::gpu0-&gt;gpu1" classname="peerpool-check""#), "{junit}");
    assert!(junit.contains(r#"<property name="gpus" value="4"/>"#), "{junit}");
    assert_eq!(code(&check(Some("corrupt_link_pair"), &out)), 1);
    assert_eq!(code(&check(Some("one_gpu"), &out)), 3);
    let none = topology_file(dir.path(), "name = \"none\"\ndevices = []\n");
    let output = check(Some(none.to_str().unwrap()), &out);
    assert_eq!(code(&output), 3, "{}", text(&output));
    let unlinked = topology_file(
        dir.path(),
        "name = \"unlinked\"\n[[devices]]\ncount = 2\nname = \"X\"\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]\npool_handle_types = 1\n",
    );
    let output = check(Some(unlinked.to_str().unwrap()), &out);
    assert_eq!(code(&output), 3, "two GPUs without a peer path: {}", text(&output));
    if no_driver() {
        assert_eq!(code(&check(None, &out)), 0, "the simulated pair without a GPU");
    }
}

fn check_simulates_the_topology_the_environment_names() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let args = ["check", "--quiet", "--out", out.to_str().unwrap()];
    let output = peerpool_with(&args, &[("PEERPOOL_TOPOLOGY", "four_gpu_islands")]);
    assert_eq!(code(&output), 0, "{}", text(&output));
    assert!(text(&output).starts_with("peerpool check: simulated topology `four_gpu_islands`"), "{}", text(&output));
    assert!(text(&output).contains("GPU3"), "four GPUs in the matrix: {}", text(&output));
    // On H200s peerpool's own kernels load from their machine code and run natively: no word
    // that kernels of machine code alone cannot run.
    let output = peerpool_with(&args, &[("PEERPOOL_TOPOLOGY", "two_h200_nvlink")]);
    assert!(!text(&output).contains("peerpool-sim:"), "{}", text(&output));
    let output = peerpool_with(&args, &[("PEERPOOL_TOPOLOGY", "corrupt_link_pair")]);
    assert_eq!(code(&output), 1, "{}", text(&output));
    let output = peerpool_with(&args, &[("PEERPOOL_TOPOLOGY", "no_such_machine")]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("PEERPOOL_TOPOLOGY=no_such_machine"), "{}", text(&output));
    // The deprecated names are read as the one setting; two that disagree are bad input.
    let output = peerpool_with(&args, &[("PEERPOOL_SIM_TOPOLOGY", "one_gpu")]);
    assert!(text(&output).starts_with("peerpool check: simulated topology `one_gpu`"), "{}", text(&output));
    let output = peerpool_with(&args, &[("PEERPOOL_TOPOLOGY", "one_gpu"), ("PEERPOOL_HARDWARE", "four_gpu_islands")]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("PEERPOOL_HARDWARE=four_gpu_islands disagree"), "{}", text(&output));
    // --topology wins over the environment.
    let mut with_topology = args.to_vec();
    with_topology.extend(["--topology", "one_gpu"]);
    assert_eq!(code(&peerpool_with(&with_topology, &[("PEERPOOL_TOPOLOGY", "four_gpu_islands")])), 3);
}

/// A setting that is not UTF-8 is refused, naming it, never taken as unset: a CI job's
/// `PEERPOOL_REQUIRE_GPUS=2<0xff>` once ran the simulator and passed.
fn a_setting_that_is_not_utf8_is_refused_not_taken_as_unset() {
    use std::os::unix::ffi::OsStringExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (name, value) in [
        ("PEERPOOL_REQUIRE_GPUS", b"2\xff".to_vec()),
        ("PEERPOOL_TOPOLOGY", b"two_h200_nvlink\xff".to_vec()),
        ("PEERPOOL_TOPOLOGY", b"\xff".to_vec()),
        ("PEERPOOL_HARDWARE", b"one_gpu\xff".to_vec()),
    ] {
        let output = support::command()
            .args(["check", "--quiet", "--out", out.to_str().unwrap()])
            .env(name, std::ffi::OsString::from_vec(value))
            .output()
            .expect("the command runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(code(&output), 2, "{name}: {}", text(&output));
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(name) && stderr.contains("not UTF-8"), "{stderr}");
        assert!(!out.join("check.json").exists(), "{name}: nothing ran");
    }
}

fn check_with_gpus_required_never_falls_back_to_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let args = ["check", "--quiet", "--out", out.to_str().unwrap()];
    // No machine here has 99 GPUs: by flag or by environment, the verdict is 4, not a simulated pass.
    let mut flagged = args.to_vec();
    flagged.extend(["--require-gpus", "99"]);
    let output = peerpool(&flagged);
    assert_eq!(code(&output), GPUS_REQUIRED, "{}", text(&output));
    assert!(text(&output).contains("99 real GPU(s) are required (--require-gpus)"), "{}", text(&output));
    assert!(!text(&output).contains("SIMULATED"), "{}", text(&output));
    let output = peerpool_with(&args, &[("PEERPOOL_REQUIRE_GPUS", "99")]);
    assert_eq!(code(&output), GPUS_REQUIRED, "{}", text(&output));
    assert!(text(&output).contains("(PEERPOOL_REQUIRE_GPUS)"), "{}", text(&output));
    // A simulated topology never stands in for required GPUs, named either way.
    let output = peerpool_with(&args, &[("PEERPOOL_REQUIRE_GPUS", "1"), ("PEERPOOL_TOPOLOGY", "two_h200_nvlink")]);
    assert_eq!(code(&output), GPUS_REQUIRED, "{}", text(&output));
    assert!(text(&output).contains("simulated topology `two_h200_nvlink`"), "{}", text(&output));
    flagged.extend(["--topology", "two_h200_nvlink"]);
    assert_eq!(code(&peerpool(&flagged)), GPUS_REQUIRED);
    if no_driver() {
        let output = peerpool_with(&args, &[("PEERPOOL_REQUIRE_GPUS", "1")]);
        assert_eq!(code(&output), GPUS_REQUIRED, "{}", text(&output));
        assert!(text(&output).contains("no CUDA driver here (no simulated fallback)"), "{}", text(&output));
    }
    assert!(!out.join("check.json").exists(), "nothing is written when the GPUs are not there");
    // `0` turns the mode off; a word is bad input.
    assert_eq!(code(&peerpool_with(&args, &[("PEERPOOL_REQUIRE_GPUS", "two")])), 2);
    if no_driver() {
        assert_eq!(code(&peerpool_with(&args, &[("PEERPOOL_REQUIRE_GPUS", "0")])), 0);
    }
}

fn a_bad_out_directory_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path(), &link).unwrap();
    // 128 GPUs (16,256 pairs) would take minutes: a quick refusal shows nothing ran first.
    let big = topology_file(
        dir.path(),
        "name = \"big\"\n[[devices]]\ncount = 128\nname = \"X\"\nmemory_mib = 1024\nsms = 1\ncompute_capability = [9, 0]\n[links]\ndefault = {}\n",
    );
    for out in [file.clone(), file.join("below"), link] {
        let started = Instant::now();
        let output = check(Some(big.to_str().unwrap()), &out);
        assert_eq!(code(&output), 2, "{}: {}", out.display(), text(&output));
        assert!(text(&output).contains("--out"), "{}", text(&output));
        assert!(started.elapsed() < Duration::from_secs(10), "{}: {:?}", out.display(), started.elapsed());
    }
    for command in ["bench", "calibrate"] {
        let output = peerpool(&[command, "--out", file.to_str().unwrap()]);
        assert_eq!(code(&output), 2, "{command}: {}", text(&output));
    }
    // Where calibrate would write one of its files is a directory: refused before it measures.
    let out = dir.path().join("calibration");
    std::fs::create_dir_all(out.join("timing.json")).unwrap();
    let output = peerpool(&["calibrate", "--out", out.to_str().unwrap()]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("timing.json: is a directory"), "{}", text(&output));
    assert!(!out.join("calibration.json").exists(), "nothing measured, nothing written");
}

fn check_replaces_a_planted_link_instead_of_writing_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, out.join("check.md")).unwrap();
    assert_eq!(code(&check(Some("two_h200_nvlink"), &out)), 0);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(out.join("check.md")).unwrap().is_file());
}

fn commands_that_need_a_gpu_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let output = peerpool(&["bench", "--out", dir.path().join("bench").to_str().unwrap()]);
    assert_eq!(code(&output), GPUS_REQUIRED, "{}", text(&output));
    assert_eq!(code(&peerpool(&["facts"])), GPUS_REQUIRED);
    assert_eq!(code(&peerpool(&[])), GPUS_REQUIRED, "facts is the default");
    assert_eq!(code(&peerpool(&["topologies"])), 0);
    let out = dir.path().join("calibration");
    let output = peerpool(&["calibrate", "--out", out.to_str().unwrap()]);
    assert_eq!(code(&output), GPUS_REQUIRED, "{}", text(&output));
    assert!(text(&output).contains("no CUDA driver"), "{}", text(&output));
    assert!(!out.join("timing.json").exists(), "no model without a measurement");
}

fn trial(name: &str, status: Status) -> TrialRecord {
    TrialRecord { name: name.into(), binary: "suite".into(), status, detail: None, millis: None }
}

/// A report directory holding a plan of two trials and the given results.
fn report_dir(results: &[TrialRecord]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        hardware: HardwareRecord::missing("no CUDA driver"),
        build: BuildRecord::current(),
        trials: vec![trial("a", Status::NotRun), trial("b", Status::Skipped)],
    };
    plan.write(dir.path(), "suite").unwrap();
    for result in results {
        result.write(dir.path()).unwrap();
    }
    dir
}

fn report(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["report", dir.to_str().unwrap()];
    args.extend(extra);
    peerpool(&args)
}

fn report_exits_by_what_it_merged() {
    assert_eq!(code(&report(report_dir(&[trial("a", Status::Passed)]).path(), &[])), 0);
    assert_eq!(code(&report(report_dir(&[trial("a", Status::Failed)]).path(), &[])), 1);
    assert_eq!(code(&report(report_dir(&[]).path(), &[])), 3, "planned, nothing ran");
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(code(&report(empty.path(), &[])), 3);
    let output = report(&empty.path().join("missing"), &[]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("does not exist"), "{}", text(&output));
    let broken = report_dir(&[]);
    std::fs::write(broken.path().join("x.result.json"), [0xFF, 0x00]).unwrap();
    let output = report(broken.path(), &[]);
    assert_eq!(code(&output), 2);
    assert!(text(&output).contains("x.result.json"), "{}", text(&output));
}

fn report_writes_junit_with_every_skip_and_its_reason() {
    let mut skipped = trial("b", Status::Skipped);
    skipped.detail = Some("needs 2 GPUs, found 0".into());
    let dir = report_dir(&[trial("a", Status::Passed), skipped]);
    let output = report(dir.path(), &[]);
    assert_eq!(code(&output), 0, "{}", text(&output));
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(junit.contains(r#"<testsuite name="suite" tests="2" skipped="1" errors="0" failures="0">"#), "{junit}");
    assert!(junit.contains(r#"<skipped message="needs 2 GPUs, found 0"/>"#), "{junit}");
    assert!(junit.contains(r#"<property name="hardware.missing" value="no CUDA driver"/>"#), "{junit}");
    let elsewhere = dir.path().join("elsewhere.xml");
    let output = report(dir.path(), &["--junit", elsewhere.to_str().unwrap()]);
    assert_eq!(code(&output), 0, "{}", text(&output));
    assert!(std::fs::read_to_string(&elsewhere).unwrap().contains("<testcase name=\"a\""));
}

fn report_refuses_one_path_for_both_outputs() {
    let dir = report_dir(&[trial("a", Status::Passed)]);
    let same = dir.path().join("same");
    let same = same.to_str().unwrap();
    let output = report(dir.path(), &["--json", same, "--markdown", same]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(!Path::new(same).exists(), "nothing written");
    let default_md = dir.path().join("report.md");
    let output = report(dir.path(), &["--json", default_md.to_str().unwrap()]);
    assert_eq!(code(&output), 2, "the JSON would overwrite the default Markdown: {}", text(&output));
    let output = report(dir.path(), &["--json", &format!("{}/./report.md", dir.path().display())]);
    assert_eq!(code(&output), 2, "the same file by another spelling");
    let output = report(dir.path(), &["--junit", dir.path().join("report.json").to_str().unwrap()]);
    assert_eq!(code(&output), 2, "the JUnit would overwrite the default JSON: {}", text(&output));
    assert!(text(&output).contains("--json and --junit both name"), "{}", text(&output));
    assert_eq!(code(&report(dir.path(), &[])), 0);
}

/// Outside a cargo target directory, without $PEERPOOL_REPORT_DIR or $XDG_RUNTIME_DIR, there
/// is no report directory: not a shared one in /tmp.
fn no_report_directory_falls_back_to_a_shared_one() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("peerpool");
    std::fs::copy(support::binary(), &copy).unwrap();
    let run = |runtime: Option<&Path>| {
        let mut command = Command::new(&copy);
        command.arg("report").env_remove("PEERPOOL_REPORT_DIR").env_remove("XDG_RUNTIME_DIR");
        command.env_remove("CARGO_TARGET_DIR");
        if let Some(runtime) = runtime {
            command.env("XDG_RUNTIME_DIR", runtime);
        }
        support::output_of_copy(&mut command, &copy)
    };
    let output = run(None);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("set PEERPOOL_REPORT_DIR"), "{}", text(&output));
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let output = run(Some(&runtime));
    assert!(text(&output).contains(&format!("{}/peerpool-report", runtime.display())), "{}", text(&output));
}

fn the_negative_probe_child_prints_the_shared_report_line() {
    let output = peerpool_with(&["owner=0", "accessor=1"], &[(ROLE_ENV, "negative-probe")]);
    assert_eq!(code(&output), 0);
    match ChildResult::find(&output.stdout) {
        Some(ChildResult::Failed { message }) => assert!(message.contains("no CUDA driver"), "{message}"),
        other => panic!("expected a failed report, got {other:?}: {}", text(&output)),
    }
}

/// The probe child's call is checked before any work: a missing argument or an unknown role is
/// one line and exit 2, an argument that is not a number a failed report.
fn a_malformed_probe_call_is_refused() {
    let output = peerpool_with(&["owner=0"], &[(ROLE_ENV, "negative-probe")]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("argument accessor is missing"), "{}", text(&output));
    let output = peerpool_with(&["owner=0", "accessor=1", "owner=2"], &[(ROLE_ENV, "negative-probe")]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("argument owner is given twice"), "{}", text(&output));
    let output = peerpool_with(&["check"], &[(ROLE_ENV, "negative-probe")]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("argument check is not name=value"), "{}", text(&output));
    let output = peerpool_with(&[], &[(ROLE_ENV, "checker")]);
    assert_eq!(code(&output), 2, "{}", text(&output));
    assert!(text(&output).contains("no such role (its roles: negative-probe, calibrate-child)"), "{}", text(&output));
    let output = peerpool_with(&["owner=zero", "accessor=1"], &[(ROLE_ENV, "negative-probe")]);
    assert_eq!(code(&output), 0, "{}", text(&output));
    match ChildResult::find(&output.stdout) {
        Some(ChildResult::Failed { message }) => assert!(message.contains("argument owner=zero"), "{message}"),
        other => panic!("expected a failed report, got {other:?}: {}", text(&output)),
    }
}

/// A reader that went away ends the command by SIGPIPE, as other Unix tools end, not a panic.
fn a_closed_stdout_ends_the_command_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = rustix::pipe::pipe().unwrap();
    drop(reader);
    let output = support::command()
        .arg("topologies")
        .stdout(std::process::Stdio::from(writer))
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "{}", text(&output));
    assert!(!text(&output).contains("panicked"), "{}", text(&output));
}

fn test(name: &'static str, body: fn()) -> Trial {
    Trial::test(name, move || {
        body();
        Ok(())
    })
}

/// A trial that runs only where no CUDA driver is (it would touch the GPUs), and is skipped
/// with `why` elsewhere.
fn without_a_driver(name: &'static str, body: fn(), why: &'static str) -> Trial {
    match no_driver() {
        true => test(name, body),
        false => {
            eprintln!("skipped: {name}: {why}");
            Trial::test(name, move || Err(why.into())).with_ignored_flag(true)
        }
    }
}

fn main() -> ExitCode {
    let trials = vec![
        test("help_shows_the_table", help_shows_the_table),
        test("check_exits_by_what_it_found", check_exits_by_what_it_found),
        test("check_simulates_the_topology_the_environment_names", check_simulates_the_topology_the_environment_names),
        test(
            "a_setting_that_is_not_utf8_is_refused_not_taken_as_unset",
            a_setting_that_is_not_utf8_is_refused_not_taken_as_unset,
        ),
        test(
            "check_with_gpus_required_never_falls_back_to_the_simulator",
            check_with_gpus_required_never_falls_back_to_the_simulator,
        ),
        test("a_bad_out_directory_is_refused_before_any_work", a_bad_out_directory_is_refused_before_any_work),
        test(
            "check_replaces_a_planted_link_instead_of_writing_through_it",
            check_replaces_a_planted_link_instead_of_writing_through_it,
        ),
        without_a_driver(
            "commands_that_need_a_gpu_say_so",
            commands_that_need_a_gpu_say_so,
            "a CUDA driver is here, so bench, facts and calibrate would run",
        ),
        test("report_exits_by_what_it_merged", report_exits_by_what_it_merged),
        test("report_writes_junit_with_every_skip_and_its_reason", report_writes_junit_with_every_skip_and_its_reason),
        test("report_refuses_one_path_for_both_outputs", report_refuses_one_path_for_both_outputs),
        test("no_report_directory_falls_back_to_a_shared_one", no_report_directory_falls_back_to_a_shared_one),
        without_a_driver(
            "the_negative_probe_child_prints_the_shared_report_line",
            the_negative_probe_child_prints_the_shared_report_line,
            "a CUDA driver is here, so the probe would touch the GPUs",
        ),
        test("a_malformed_probe_call_is_refused", a_malformed_probe_call_is_refused),
        test("a_closed_stdout_ends_the_command_without_a_panic", a_closed_stdout_ends_the_command_without_a_panic),
    ];
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}
