//! `peerpool::child`: the timeout bounds the whole call even when a grandchild holds the
//! output pipes, the child's whole process group is gone afterwards, and the report line is
//! found among bytes that are not UTF-8.

use peerpool::child::{self, ChildOutcome, ChildReport, Finished, OUTPUT_LIMIT};
use std::process::Command;
use std::time::{Duration, Instant};

fn sh(script: &str) -> Command {
    let mut command = Command::new("/bin/sh");
    command.args(["-c", script]);
    command
}

/// The pid a script printed on its first line.
fn first_pid(stdout: &[u8]) -> u32 {
    String::from_utf8_lossy(stdout).lines().next().and_then(|l| l.trim().parse().ok()).expect("a pid first")
}

/// Whether `pid` is gone (or a zombie waiting for whoever inherited it), within a second.
fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()));
        if matches!(state, None | Some('Z') | Some('X')) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_grandchild_holding_the_pipes_does_not_hold_the_call() {
    let started = Instant::now();
    let finished = child::run(sh("sleep 30 & echo $!; exit 0"), Duration::from_secs(3)).unwrap();
    let took = started.elapsed();
    let Finished::Exited { status, stdout, .. } = finished else { panic!("the child exited at once: {finished:?}") };
    assert!(status.success());
    assert!(took < Duration::from_secs(3), "returned after {took:?}");
    assert!(gone(first_pid(&stdout)), "the sleeping grandchild was killed with the group");
}

#[test]
fn the_timeout_bounds_the_call_and_kills_the_whole_group() {
    let started = Instant::now();
    let finished = child::run(sh("sleep 30 & echo $!; sleep 30"), Duration::from_millis(500)).unwrap();
    let took = started.elapsed();
    let Finished::TimedOut { stdout, .. } = finished else { panic!("expected a timeout: {finished:?}") };
    assert!(took < Duration::from_secs(2), "returned after {took:?}");
    assert!(gone(first_pid(&stdout)), "the grandchild was killed with the group");
}

#[test]
fn a_report_line_after_bytes_that_are_not_utf8_is_found() {
    let script = r#"printf '\377\376 not text\n\200\npeerpool-child-report: {"outcome":"cuda_error","call":"cuStreamSynchronize","code":"CUDA_ERROR_ILLEGAL_ADDRESS","sticky":true}\n'"#;
    let outcome = child::run_reporting(sh(script), Duration::from_secs(10));
    assert_eq!(outcome.expect_cuda_error("CUDA_ERROR_ILLEGAL_ADDRESS", true), Ok(()), "{outcome:?}");
    let line = ChildReport::Ok.line();
    let mut bytes = vec![0xFF, b'\n'];
    bytes.extend_from_slice(line.as_bytes());
    assert_eq!(ChildReport::find(&bytes), Some(ChildReport::Ok));
}

#[test]
fn a_child_without_a_report_says_how_it_ended() {
    let outcome = child::run_reporting(sh("echo first >&2; echo boom >&2; exit 3"), Duration::from_secs(10));
    let ChildOutcome::NoReport { status, stderr } = outcome else { panic!("{outcome:?}") };
    assert!(status.contains('3'), "{status}");
    assert_eq!(stderr, "first\nboom");
    assert!(matches!(
        child::run_reporting(Command::new("/nonexistent/binary"), Duration::from_secs(1)),
        ChildOutcome::SpawnFailed(_)
    ));
}

#[test]
fn output_is_kept_within_the_limit() {
    let script = "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2; echo end >&2";
    let Finished::Exited { stdout, stderr, .. } = child::run(sh(script), Duration::from_secs(20)).unwrap() else {
        panic!("exits")
    };
    assert_eq!(stdout.len(), OUTPUT_LIMIT);
    assert_eq!(stderr.len(), OUTPUT_LIMIT);
    assert!(stderr.ends_with(b"end\n"), "stderr keeps its end");
}

#[test]
fn a_driver_error_inside_each_layers_error_is_reported_as_one() {
    use peerpool::grant::Stage;
    use peerpool::ipc::ShareError;
    use peerpool::{CudaCode, CudaError, Error, GrantError};
    let cuda = CudaError::new("cuStreamSynchronize", CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS);
    let expected = ChildReport::CudaError {
        call: "cuStreamSynchronize".into(),
        code: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
        sticky: true,
    };
    let errors: [child::ChildError; 5] = [
        Box::new(cuda),
        Box::new(Error::Cuda(cuda)),
        Box::new(GrantError::Cuda { stage: Stage::Verify, error: cuda }),
        Box::new(GrantError::Other(Error::Cuda(cuda))),
        Box::new(ShareError::Grant(GrantError::Cuda { stage: Stage::Apply, error: cuda })),
    ];
    for error in errors {
        let shown = error.to_string();
        assert_eq!(ChildReport::from_result(Err(error)), expected, "{shown}");
    }
    let other = ChildReport::from_result(Err(Box::new(Error::InvalidArgument("no".into()))));
    assert_eq!(other, ChildReport::Failed { message: "invalid argument: no".into() });
}
