//! `peerpool check --topology`: bad topology input is refused at once with a clear line and
//! exit status 2, before any pair is checked.

mod support;

use std::process::Output;
use std::time::{Duration, Instant};

fn check(topology: &str) -> (Output, Duration) {
    let out = std::env::temp_dir().join(format!("peerpool-cli-check-input-{}", std::process::id()));
    let started = Instant::now();
    let output = support::command()
        .args(["check", "--quiet", "--topology", topology, "--out"])
        .arg(&out)
        .output()
        .expect("the command runs");
    let _ = std::fs::remove_dir_all(&out);
    (output, started.elapsed())
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `check` on a topology file of `text`, removed afterwards.
fn check_text(name: &str, text: &str) -> (Output, Duration) {
    let path = std::env::temp_dir().join(format!("peerpool-cli-{name}-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let checked = check(path.to_str().unwrap());
    std::fs::remove_file(&path).unwrap();
    checked
}

/// A topology of `count` devices with `sms` SMs each.
fn devices(count: u64, sms: u64) -> String {
    format!(
        "name = \"t\"\n[[devices]]\ncount = {count}\nname = \"X\"\nmemory_mib = 64\nsms = {sms}\ncompute_capability = [9, 0]\n"
    )
}

/// Refused as bad input (exit status 2), with each of `phrases` on stderr.
fn assert_refused(output: &Output, phrases: &[&str]) {
    assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
    for phrase in phrases {
        assert!(stderr(output).contains(phrase), "{phrase:?} not in: {}", stderr(output));
    }
}

#[test]
fn a_missing_file_is_reported_as_missing() {
    let (output, _) = check("./no-such-topology.toml");
    assert_refused(&output, &["topology file ./no-such-topology.toml does not exist"]);
}

#[test]
fn an_unknown_catalog_name_lists_the_catalog() {
    let (output, _) = check("no_such_machine");
    assert_refused(&output, &["no such catalog topology", "sixteen_gpu_nvswitch"]);
}

#[test]
fn out_of_range_numbers_are_bad_input_not_a_panic() {
    let (output, _) = check_text("sms", &devices(2, 536870912));
    assert_refused(&output, &["sms = 536870912"]);
}

#[test]
fn more_gpus_than_check_takes_are_refused_at_once() {
    let (output, took) = check_text("count", &devices(1000, 1));
    assert_refused(&output, &["at most 128"]);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// A timing model whose machine-wide lock has four billion slots once made every `cuInit`
/// try each of them (over 400 s); a key given twice was taken silently.
#[test]
fn a_timing_file_out_of_range_at_any_depth_or_with_a_key_twice_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, says) in [
        (
            "slots",
            r#"{"init_serial": {"device": false, "process": false, "machine": true, "at_once": 4294967295}}"#,
            "init_serial.at_once",
        ),
        ("twice", r#"{"init_us": 5.0, "init_us": 6.0}"#, "\"init_us\" is given twice"),
    ] {
        let timing = dir.path().join(format!("{name}.json"));
        std::fs::write(&timing, text).unwrap();
        let started = Instant::now();
        let output = support::command()
            .args(["check", "--quiet", "--topology", "two_h200_nvlink", "--timing"])
            .arg(&timing)
            .arg("--out")
            .arg(dir.path().join("out"))
            .output()
            .expect("the command runs");
        assert_refused(&output, &[says]);
        assert_eq!(stderr(&output).lines().count(), 1, "one line: {}", stderr(&output));
        assert!(started.elapsed() < Duration::from_secs(10), "{name}: {:?}", started.elapsed());
    }
}

/// What the command says of a topology reaches the terminal as one short line without a
/// control sequence from the file: a clear-screen in the machine's name, a window title in a
/// line the TOML parser refuses, a mebibyte line.
#[test]
fn a_hostile_topology_is_echoed_escaped_cut_and_on_one_line() {
    let long = format!("name = \"{}", "A".repeat((1 << 20) - 100));
    for (name, text) in [
        (
            "escaped-name",
            "name = \"x\\u001b[2J\"\n[[devices]]\nname = \"X\"\nmemory_mib = 64\nsms = 1\ncompute_capability = [9, 0]\n",
        ),
        ("raw-line", "name = \"x\u{1b}]0;pwned\u{7}\n"),
        ("long-line", long.as_str()),
    ] {
        let (output, _) = check_text(name, text);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", stderr(&output));
        let err = &output.stderr;
        assert!(!err.iter().any(|&b| b == 0x1b || b == 0x07 || b == 0x9b), "{name}: {}", stderr(&output));
        assert_eq!(stderr(&output).lines().count(), 1, "{name}: one line: {}", stderr(&output));
        assert!(err.len() < 1024, "{name}: {} bytes", err.len());
    }
}
