//! `peerpool::child`: the timeout bounds the whole call even when a grandchild holds the
//! output pipes, the child's whole process group is gone afterwards, and the report line is
//! found among bytes that are not UTF-8. Roles: this binary runs again as its own child in the
//! roles below (served by `main`, before the harness reads the command line); a call is checked
//! on both sides, a role is never inherited, not even by a launcher, and a child that sees only
//! a pair gets its UUIDs.

mod role_trials;

use peerpool::System;
use peerpool::child::{
    self, Call, ChildError, ChildOutcome, ChildResult, Finished, OUTPUT_LIMIT, ROLE_ENV, Role, Roles,
};
use peerpool_sim::SimDriver;
use role_trials::roles_or_tests;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Adds `a` and `b`, and fails unless the sum is `sum`.
const SUM: Role = Role::new("sum", &["a", "b", "sum"]);
/// Runs `sh` and reports what it saw of the role variable.
const SHELL: Role = Role::new("shell", &[]);
/// Reports the pair it was given, which must be `expected`.
const PAIR: Role = Role::new("pair", &["expected"]);
/// Takes the rest of its command line, which must be `--list` and `x=y`.
const REST: Role = Role::new("rest", &[]).with_rest();

const TIMEOUT: Duration = Duration::from_secs(20);

fn main() -> ExitCode {
    let roles =
        Roles::new().reporting(SUM, sum).reporting(SHELL, |_| shell()).reporting(PAIR, pair).reporting(REST, |call| {
            match call.rest() {
                [list, pair] if list == "--list" && pair == "x=y" => Ok(()),
                other => Err(format!("the rest is {other:?}").into()),
            }
        });
    roles_or_tests(
        roles,
        &[
            (
                "a_grandchild_holding_the_pipes_does_not_hold_the_call",
                a_grandchild_holding_the_pipes_does_not_hold_the_call,
            ),
            (
                "the_timeout_bounds_the_call_and_kills_the_whole_group",
                the_timeout_bounds_the_call_and_kills_the_whole_group,
            ),
            (
                "a_report_line_after_bytes_that_are_not_utf8_is_found",
                a_report_line_after_bytes_that_are_not_utf8_is_found,
            ),
            ("a_child_without_a_report_says_how_it_ended", a_child_without_a_report_says_how_it_ended),
            ("output_is_kept_within_the_limit", output_is_kept_within_the_limit),
            (
                "a_driver_error_inside_each_layers_error_is_reported_as_one",
                a_driver_error_inside_each_layers_error_is_reported_as_one,
            ),
            ("a_role_child_does_its_work_and_reports", a_role_child_does_its_work_and_reports),
            (
                "a_call_the_role_does_not_declare_is_refused_on_both_sides",
                a_call_the_role_does_not_declare_is_refused_on_both_sides,
            ),
            ("a_role_is_not_inherited_not_even_by_a_launcher", a_role_is_not_inherited_not_even_by_a_launcher),
            ("a_child_that_sees_only_a_pair_gets_its_uuids", a_child_that_sees_only_a_pair_gets_its_uuids),
        ],
    )
}

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

fn a_grandchild_holding_the_pipes_does_not_hold_the_call() {
    let started = Instant::now();
    let finished = child::run(sh("sleep 30 & echo $!; exit 0"), Duration::from_secs(3)).unwrap();
    let took = started.elapsed();
    let Finished::Exited { status, stdout, .. } = finished else { panic!("the child exited at once: {finished:?}") };
    assert!(status.success());
    assert!(took < Duration::from_secs(3), "returned after {took:?}");
    assert!(gone(first_pid(&stdout)), "the sleeping grandchild was killed with the group");
}

fn the_timeout_bounds_the_call_and_kills_the_whole_group() {
    let started = Instant::now();
    let finished = child::run(sh("sleep 30 & echo $!; sleep 30"), Duration::from_millis(500)).unwrap();
    let took = started.elapsed();
    let Finished::TimedOut { stdout, .. } = finished else { panic!("expected a timeout: {finished:?}") };
    assert!(took < Duration::from_secs(2), "returned after {took:?}");
    assert!(gone(first_pid(&stdout)), "the grandchild was killed with the group");
}

fn a_report_line_after_bytes_that_are_not_utf8_is_found() {
    let script = r#"printf '\377\376 not text\n\200\npeerpool-child-result: {"outcome":"cuda_error","call":"cuStreamSynchronize","code":"CUDA_ERROR_ILLEGAL_ADDRESS","sticky":true}\n'"#;
    let outcome = child::run_reporting(sh(script), Duration::from_secs(10));
    assert_eq!(outcome.expect_cuda_error("CUDA_ERROR_ILLEGAL_ADDRESS", true), Ok(()), "{outcome:?}");
    let line = ChildResult::Ok.line();
    let mut bytes = vec![0xFF, b'\n'];
    bytes.extend_from_slice(line.as_bytes());
    assert_eq!(ChildResult::find(&bytes), Some(ChildResult::Ok));
}

fn a_child_without_a_report_says_how_it_ended() {
    let outcome = child::run_reporting(sh("echo first >&2; echo boom >&2; exit 3"), Duration::from_secs(10));
    let ChildOutcome::NoResult { status, stderr } = outcome else { panic!("{outcome:?}") };
    assert!(status.contains('3'), "{status}");
    assert_eq!(stderr, "first\nboom");
    assert!(matches!(
        child::run_reporting(Command::new("/nonexistent/binary"), Duration::from_secs(1)),
        ChildOutcome::SpawnFailed(_)
    ));
}

fn output_is_kept_within_the_limit() {
    let script = "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2; echo end >&2";
    let Finished::Exited { stdout, stderr, .. } = child::run(sh(script), Duration::from_secs(20)).unwrap() else {
        panic!("exits")
    };
    assert_eq!(stdout.len(), OUTPUT_LIMIT);
    assert_eq!(stderr.len(), OUTPUT_LIMIT);
    assert!(stderr.ends_with(b"end\n"), "stderr keeps its end");
}

fn a_driver_error_inside_each_layers_error_is_reported_as_one() {
    use peerpool::grant::Stage;
    use peerpool::ipc::ShareError;
    use peerpool::{CudaCode, CudaError, Error, GrantError};
    let cuda = CudaError::new("cuStreamSynchronize", CudaCode::CUDA_ERROR_ILLEGAL_ADDRESS);
    let expected = ChildResult::CudaError {
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
        assert_eq!(ChildResult::from_result(Err(error)), expected, "{shown}");
    }
    let other = ChildResult::from_result(Err(Box::new(Error::InvalidArgument("no".into()))));
    assert_eq!(other, ChildResult::Failed { message: "invalid argument: no".into() });
}

fn sum(call: &Call) -> Result<(), ChildError> {
    let (a, b, sum): (u32, u32, u32) = (call.value("a")?, call.value("b")?, call.value("sum")?);
    match a + b == sum {
        true => Ok(()),
        false => Err(format!("{a} + {b} is not {sum}").into()),
    }
}

fn a_role_child_does_its_work_and_reports() {
    let run = |a: &str, sum: &str| {
        let mut command = SUM.command();
        command.arg("a", a).arg("b", 3).arg("sum", sum);
        child::run_reporting(command.build().unwrap(), TIMEOUT)
    };
    assert_eq!(run("2", "5"), ChildOutcome::Returned(ChildResult::Ok));
    assert_eq!(run("2", "6"), ChildOutcome::Returned(ChildResult::Failed { message: "2 + 3 is not 6".into() }));
    let ChildOutcome::Returned(ChildResult::Failed { message }) = run("two", "5") else { panic!("a failed report") };
    assert!(message.contains("argument a=two"), "{message}");
    let mut rest = REST.command();
    rest.rest(["--list", "x=y"]);
    assert_eq!(child::run_reporting(rest.build().unwrap(), TIMEOUT).expect_ok(), Ok(()));
}

fn a_call_the_role_does_not_declare_is_refused_on_both_sides() {
    let refused = |command: &child::RoleCommand| command.build().unwrap_err().to_string();
    let mut missing = SUM.command();
    missing.arg("a", 1).arg("sum", 1);
    assert!(refused(&missing).contains("argument b is missing"), "{}", refused(&missing));
    let mut unknown = SUM.command();
    unknown.arg("a", 1).arg("b", 1).arg("sum", 2).arg("c", 3);
    assert!(refused(&unknown).contains("takes no argument c"), "{}", refused(&unknown));
    let mut rest = SUM.command();
    rest.arg("a", 1).arg("b", 1).arg("sum", 2).rest(["x"]);
    assert!(refused(&rest).contains("takes nothing after --"), "{}", refused(&rest));
    // The child refuses what a hand-made call gets wrong, with exit status 2 and one line.
    let this = child::this_binary().unwrap();
    let by_hand = |role: &str, args: &[&str]| {
        let mut command = Command::new(&this);
        command.env(ROLE_ENV, role).args(args);
        match child::run(command, TIMEOUT).unwrap() {
            Finished::Exited { status, stderr, .. } => (status.code(), String::from_utf8_lossy(&stderr).into_owned()),
            timed_out => panic!("{timed_out:?}"),
        }
    };
    for (role, args, message) in [
        ("sum", &["a=1", "b=2"][..], "argument sum is missing"),
        ("sum", &["a=1", "b=2", "sum=3", "c=4"], "argument c is not one of this role's"),
        ("sum", &["a=1", "a=2"], "argument a is given twice"),
        ("sum", &["a=1", "b=2", "sum=3", "--", "x"], "it takes nothing after --"),
        ("sum", &["--exact", "x"], "argument --exact is not name=value"),
        ("product", &[], "this binary has no such role (its roles: sum, shell, pair, rest)"),
    ] {
        let (code, stderr) = by_hand(role, args);
        assert_eq!(code, Some(i32::from(child::BAD_CALL)), "{role} {args:?}: {stderr}");
        assert!(stderr.contains(message) && stderr.lines().count() == 1, "{role} {args:?}: {stderr}");
    }
}

/// What `sh`, started by this role child through the runner, sees of the role variable.
fn shell() -> Result<(), ChildError> {
    let mut sh = Command::new("/bin/sh");
    sh.args(["-c", "echo \"${PEERPOOL_CHILD_ROLE-unset}\""]);
    match child::run(sh, TIMEOUT)? {
        Finished::Exited { stdout, .. } if stdout == b"unset\n" => Ok(()),
        other => Err(format!("the shell saw {other:?}").into()),
    }
}

fn a_role_is_not_inherited_not_even_by_a_launcher() {
    let command = SHELL.command().build().unwrap();
    assert_eq!(child::run_reporting(command, TIMEOUT).expect_ok(), Ok(()), "the shell the child starts");
    // A launcher runs the program it is given (`env`, which sets the role for this binary
    // alone): it does not see the role itself.
    let script = "echo \"launcher: ${PEERPOOL_CHILD_ROLE-unset}\"; exec \"$@\"";
    let mut command = SUM.command();
    command.arg("a", 1).arg("b", 1).arg("sum", 2).under("/bin/sh", ["-c", script, "sh"]);
    let Finished::Exited { stdout, .. } = child::run(command.build().unwrap(), TIMEOUT).unwrap() else {
        panic!("the launcher and its child end")
    };
    assert!(stdout.starts_with(b"launcher: unset\n"), "{}", String::from_utf8_lossy(&stdout));
    assert_eq!(ChildResult::find(&stdout), Some(ChildResult::Ok));
}

fn pair(call: &Call) -> Result<(), ChildError> {
    let expected = call.arg("expected")?;
    let visible = std::env::var("CUDA_VISIBLE_DEVICES")?;
    match child::pair_uuids()? {
        Some((owner, accessor)) if format!("{owner},{accessor}") == expected && visible == expected => Ok(()),
        other => Err(format!("the pair is {other:?}, CUDA_VISIBLE_DEVICES {visible}").into()),
    }
}

fn a_child_that_sees_only_a_pair_gets_its_uuids() {
    let system =
        System::with_driver(Arc::new(SimDriver::new(peerpool_sim::catalog_topology("eight_gpu_nvswitch").unwrap())))
            .unwrap();
    let expected = format!("{},{}", system.uuid(5).unwrap(), system.uuid(2).unwrap());
    let mut command = PAIR.command();
    command.arg("expected", &expected);
    child::see_only_pair(&mut command, &system, (5, 2));
    assert_eq!(child::run_reporting(command.build().unwrap(), TIMEOUT).expect_ok(), Ok(()));
    // In this process, no parent named a pair.
    assert_eq!(child::pair_uuids(), Ok(None));
}
