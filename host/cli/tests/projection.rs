//! `peerpool check` on simulated machines prints the wall time the simulator's timing model
//! projects for the real machine beside the time it took, and the floor of that machine: what
//! its serial resources alone hold (every probe a process of its own with one context, contexts
//! made one at a time across the machine, as calibrated on the H200s:
//! `host/sim/timing/h200.json`). With the negative probes pipelined, a check that proves every
//! ordered pair's fault projects at most 1.15x the floor on the 8- and 16-GPU NVSwitch nodes.

mod support;

use std::collections::BTreeMap;

/// The projected seconds `peerpool check` prints for a catalog topology.
fn projected(topology: &str, timing: Option<&str>) -> f64 {
    run(topology, timing, &[]).projected
}

/// What one `peerpool check` printed and wrote.
struct Run {
    projected: f64,
    /// The floor's seconds, and the ratio printed beside it.
    floor: f64,
    ratio: f64,
    stdout: String,
    json: serde_json::Value,
    junit: String,
}

fn run(topology: &str, timing: Option<&str>, args: &[&str]) -> Run {
    let out = tempfile::tempdir().unwrap();
    let mut command = support::command();
    command.args(["check", "--quiet", "--topology", topology, "--out"]).arg(out.path()).args(args);
    if let Some(timing) = timing {
        command.args(["--timing", timing]);
    }
    let output = command.output().expect("the command runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{topology}: {text}{}", String::from_utf8_lossy(&output.stderr));
    let line = text.lines().find(|l| l.starts_with("timing: ")).unwrap_or_else(|| panic!("no timing line: {text}"));
    assert!(line.contains("took ") && line.contains(" s here"), "{line}");
    let seconds = line.rsplit(": ").next().and_then(|v| v.strip_suffix(" s")).and_then(|v| v.parse().ok());
    let projected = seconds.unwrap_or_else(|| panic!("no projection in {line}"));
    let line = text.lines().find(|l| l.starts_with("floor: ")).unwrap_or_else(|| panic!("no floor line: {text}"));
    let floor = line["floor: ".len()..].split(' ').next().and_then(|v| v.parse().ok());
    let ratio = line.rsplit(": ").next().and_then(|v| v.strip_suffix('x')).and_then(|v| v.parse().ok());
    let (Some(floor), Some(ratio)) = (floor, ratio) else { panic!("no floor and ratio in {line}") };
    let read = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap();
    let json = serde_json::from_str(&read("check.json")).unwrap();
    Run { projected, floor, ratio, stdout: text, json, junit: read("junit.xml") }
}

/// The negative-probe trials of a check.json, by status.
fn probe_statuses(json: &serde_json::Value) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for trial in json["trials"].as_array().expect("trials") {
        if trial["name"].as_str().is_some_and(|n| n.starts_with("check::negative_probe::")) {
            *counts.entry(trial["status"].as_str().unwrap_or("?").to_string()).or_default() += 1;
        }
    }
    counts
}

/// How far two runs of one check may project apart: the probe children book the machine's
/// shared resources (its context lock, its cuInit slots) in the order they reach them, which
/// the host's scheduler decides, so a projection varies by a few hundredths of a second.
const JITTER: f64 = 0.15;

/// A timing model file in `dir` holding `json`.
fn timing_file(dir: &tempfile::TempDir, json: &str) -> std::path::PathBuf {
    let file = dir.path().join("timing.json");
    std::fs::write(&file, json).unwrap();
    file
}

#[test]
fn with_every_pair_s_fault_proven_8_and_16_gpu_nodes_project_at_most_1_15x_their_floor() {
    for (topology, pairs) in [("eight_gpu_nvswitch", 56), ("sixteen_gpu_nvswitch", 240)] {
        let run = run(topology, None, &[]);
        println!("{topology}: projected {:.2} s, floor {:.2} s, {:.3}x", run.projected, run.floor, run.ratio);
        let passed = probe_statuses(&run.json);
        assert_eq!(passed.get("passed"), Some(&pairs), "{topology}: every ordered pair's fault proven: {passed:?}");
        assert_eq!(passed.values().sum::<usize>(), pairs, "{topology}: {passed:?}");
        let cells = run.stdout.lines().filter(|l| l.trim_start().starts_with("GPU")).skip(1);
        assert_eq!(cells.map(|l| l.matches("OK*").count()).sum::<usize>(), 0, "{topology}: no pair left unproven");
        assert!(run.ratio <= 1.15, "{topology}: {} s is {}x the floor {} s", run.projected, run.ratio, run.floor);
        assert!((run.projected / run.floor - run.ratio).abs() < 0.01, "the ratio printed is the ratio");
        // The floor is a floor: no schedule beats the contexts one at a time.
        assert!(run.projected >= run.floor, "{topology}");
    }
}

#[test]
fn the_floor_is_the_calibration_s_serial_contexts_not_a_run_of_the_model() {
    // Every context one at a time, 113.2 ms each (h200.json), after a probe's process start
    // and cuInit seeing its pair (235.9 ms), and before a process's exit (63.3 ms).
    for (topology, n) in [("eight_gpu_nvswitch", 8.0), ("sixteen_gpu_nvswitch", 16.0)] {
        let contexts: f64 = n + n * (n - 1.0);
        let expected = 0.001136 + 0.235874 + contexts * 0.113220 + 0.063283;
        let floor = run(topology, None, &["--probes", "sample"]).floor;
        let sampled = 0.001136 + 0.235874 + (n + n) * 0.113220 + 0.063283;
        assert!((floor - sampled).abs() < 0.01, "{topology}: sampled floor {floor} against {sampled}");
        let all = run(topology, None, &[]).floor;
        assert!((all - expected).abs() < 0.01, "{topology}: floor {all} against {expected}");
    }
    // A model whose contexts are made at once on different GPUs has a lower floor, bound by
    // the busiest GPU's: the floor follows the constants, whatever the schedule did.
    let dir = tempfile::tempdir().unwrap();
    let per_gpu = timing_file(&dir, r#"{"context_serial": {"device": true, "process": true, "machine": false}}"#);
    let floor = run("eight_gpu_nvswitch", per_gpu.to_str(), &[]).floor;
    assert!(floor < 2.5, "eight contexts a GPU: {floor}");
}

#[test]
fn a_sample_of_probes_marks_unproven_pairs_in_the_matrix_the_json_and_the_junit() {
    let run = run("eight_gpu_nvswitch", None, &["--probes", "sample"]);
    let statuses = probe_statuses(&run.json);
    assert_eq!((statuses.get("passed"), statuses.get("skipped")), (Some(&8), Some(&48)), "{statuses:?}");
    let matrix_cells = run.stdout.lines().filter(|l| l.trim_start().starts_with("GPU")).skip(1);
    let unproven: usize = matrix_cells.map(|l| l.matches("OK*").count()).sum();
    assert_eq!(unproven, 48, "{}", run.stdout);
    assert!(run.stdout.contains("48 pair(s) marked OK* were not probed (--probes sample)"), "{}", run.stdout);
    let skipped = run.junit.matches("not probed (--probes sample)").count();
    assert_eq!(skipped, 48, "{}", run.junit);
    // Faster than every pair's probe, and its floor counts only the probes it ran.
    let all = projected("eight_gpu_nvswitch", None);
    assert!(run.projected < all / 2.0, "{} against {all}", run.projected);
    let two = crate::run("eight_gpu_nvswitch", None, &["--probes", "2"]);
    assert_eq!(probe_statuses(&two.json).get("passed"), Some(&2));
    let refused = support::command().args(["check", "--quiet", "--probes", "0"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("at least 1"), "{refused:?}");
}

#[test]
fn the_probes_cu_init_is_held_to_three_at_once() {
    // Each probe child's cuInit (236 ms seeing its pair) is hidden behind the contexts only
    // because three run at once: one at a time, 57 of them (the probes' and the parent's) would
    // take 13.4 s and the contexts would wait for them.
    let dir = tempfile::tempdir().unwrap();
    let one =
        timing_file(&dir, r#"{"init_serial": {"device": false, "process": false, "machine": true, "at_once": 1}}"#);
    let calibrated = projected("eight_gpu_nvswitch", None);
    let serial = projected("eight_gpu_nvswitch", one.to_str());
    assert!(serial > 13.0 && serial > calibrated + 4.0, "{calibrated} -> {serial}");
}

#[test]
fn a_context_made_beside_a_faulted_context_s_teardown_costs_more() {
    // The calibration charges it on the faulted context's own GPU, where it was measured; on
    // every GPU it would cost the pipeline much more, and as much as a context alone, nothing.
    let dir = tempfile::tempdir().unwrap();
    let same = timing_file(&dir, r#"{"context_beside_fault_exit_us": 113220.35}"#);
    let every = dir.path().join("every.json");
    std::fs::write(&every, r#"{"fault_exit_slows_every_gpu": true}"#).unwrap();
    let calibrated = projected("eight_gpu_nvswitch", None);
    let free = projected("eight_gpu_nvswitch", same.to_str());
    let everywhere = projected("eight_gpu_nvswitch", every.to_str());
    assert!(free <= calibrated + JITTER && calibrated < everywhere, "{free} {calibrated} {everywhere}");
    assert!(everywhere > calibrated + 1.0, "most contexts beside a teardown somewhere: {everywhere}");
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
    // each negative probe's child only its pair (nothing more). Children seeing all 8 would
    // hold the machine's three cuInit slots 0.6 s longer each (56 children: about 11 s more).
    // The parent's 0.6 s comes before the first probe starts; the pipeline's contexts then fall
    // a little differently (within 0.2 s), and each run varies by its own jitter.
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let flat = timing_file(&a, r#"{"init_devices": 2, "init_per_device_us": 0.0}"#);
    let growing = timing_file(&b, r#"{"init_devices": 2, "init_per_device_us": 100000.0}"#);
    let (flat, grown) =
        (projected("eight_gpu_nvswitch", flat.to_str()), projected("eight_gpu_nvswitch", growing.to_str()));
    assert!((0.6 - JITTER..0.8 + JITTER).contains(&(grown - flat)), "{flat} -> {grown}");
}
