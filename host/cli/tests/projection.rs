//! `peerpool check` on simulated machines prints the wall time the simulator's timing model
//! projects for the real machine beside the time it took. Issue 19 asks for at most 10 s on an
//! 8-GPU node and 25 s on a 16-GPU node. The rounds schedule meets that under the model written
//! before the H200s' calibration (`host/sim/timing/h200-before-calibration.json`), where
//! contexts on different GPUs are made at once; the calibration (`host/sim/timing/h200.json`,
//! `docs/hardware/2026-12-01-calibration`) found context creation one at a time across the
//! machine, and under it the bound is not met (12.3 s and 39.5 s with one context per probe):
//! that test expects the miss, with its reason.

mod support;

/// The projected seconds `peerpool check` prints for a catalog topology.
fn projected(topology: &str, timing: Option<&str>) -> f64 {
    let out = tempfile::tempdir().unwrap();
    let mut command = support::command();
    command.args(["check", "--quiet", "--topology", topology, "--out"]).arg(out.path());
    if let Some(timing) = timing {
        command.args(["--timing", timing]);
    }
    let output = command.output().expect("the command runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{topology}: {text}{}", String::from_utf8_lossy(&output.stderr));
    let line = text.lines().find(|l| l.starts_with("timing: ")).unwrap_or_else(|| panic!("no timing line: {text}"));
    assert!(line.contains("took ") && line.contains(" s here"), "{line}");
    let seconds = line.rsplit(": ").next().and_then(|v| v.strip_suffix(" s")).and_then(|v| v.parse().ok());
    seconds.unwrap_or_else(|| panic!("no projection in {line}"))
}

/// A timing model file in `dir` holding `json`.
fn timing_file(dir: &tempfile::TempDir, json: &str) -> std::path::PathBuf {
    let file = dir.path().join("timing.json");
    std::fs::write(&file, json).unwrap();
    file
}

/// The model written before the calibration, found at run time beside the committed one.
fn before_calibration() -> String {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let file = std::path::Path::new(&manifest).join("../sim/timing/h200-before-calibration.json");
    file.to_str().expect("a UTF-8 path").to_string()
}

#[test]
fn in_rounds_an_8_gpu_node_projects_at_most_10_s_and_a_16_gpu_node_at_most_25_s() {
    let model = before_calibration();
    let two = projected("two_h200_nvlink", Some(&model));
    let eight = projected("eight_gpu_nvswitch", Some(&model));
    let sixteen = projected("sixteen_gpu_nvswitch", Some(&model));
    println!("projected check: 2 GPUs {two:.2} s, 8 GPUs {eight:.2} s, 16 GPUs {sixteen:.2} s");
    assert!(eight <= 10.0, "8 GPUs: {eight} s");
    assert!(sixteen <= 25.0, "16 GPUs: {sixteen} s");
    // Rounds: 28x and 120x the pairs of the H200 pair, nowhere near that much time.
    assert!(two < eight && eight < sixteen && sixteen < 28.0 * two, "{two} {eight} {sixteen}");
}

#[test]
fn with_the_calibration_the_8_gpu_bound_is_missed_while_contexts_are_made_one_at_a_time() {
    // Expected to fail issue 19's bound, for this reason: every negative probe's child makes a
    // context, 113 ms and one at a time across the machine (calibrated), so the probes alone
    // hold 56 x 113 ms = 6.3 s on 8 GPUs, and the waves of a round's probes hold the rest.
    // When this fails, the bound is met: the bound test above should take the calibrated model.
    let eight = projected("eight_gpu_nvswitch", None);
    assert!(eight > 10.0, "8 GPUs: {eight} s: issue 19's bound is met with the calibration; update these tests");
    assert!(eight > 6.3, "8 GPUs: {eight} s, less than the probes' contexts alone");
}

#[test]
fn another_timing_model_changes_the_projection_and_a_bad_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let slow = timing_file(&dir, r#"{"machine": "slow", "init_us": 2000000.0}"#);
    let default = projected("two_h200_nvlink", None);
    let slower = projected("two_h200_nvlink", slow.to_str());
    // The parent's cuInit and each negative probe's child's: 1.77 s more each, the children of
    // a round in parallel.
    assert!(slower > default + 3.0, "{default} -> {slower}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"init_usec": 1.0}"#).unwrap();
    let output = support::command()
        .args(["check", "--quiet", "--topology", "two_h200_nvlink", "--timing"])
        .arg(&bad)
        .args(["--out"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("init_usec"));
}

#[test]
fn a_probe_child_s_cu_init_is_priced_for_its_pair_alone() {
    // If cuInit grows by 100 ms a visible GPU: the parent sees 8 (0.6 s more than with 2),
    // each negative probe's child only its pair (nothing more). Children seeing all 8 would add
    // 0.6 s to each of the 7 rounds of probes.
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let flat = timing_file(&a, r#"{"init_devices": 2, "init_per_device_us": 0.0}"#);
    let growing = timing_file(&b, r#"{"init_devices": 2, "init_per_device_us": 100000.0}"#);
    let (flat, grown) =
        (projected("eight_gpu_nvswitch", flat.to_str()), projected("eight_gpu_nvswitch", growing.to_str()));
    assert!((grown - flat - 0.6).abs() < 0.05, "{flat} -> {grown}");
}
