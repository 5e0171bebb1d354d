//! A peer in a pid namespace we cannot see: the kernel reports its pid as 0, in
//! `SO_PEERCRED` and in each message's `SCM_CREDENTIALS`. Such a peer still passes a same-uid
//! check, its message arrives whole, and it never passes a check that names a pid (0 included).
//!
//! The test re-runs itself inside a new pid namespace (`unshare --pid --fork`, root only), so
//! that its parent, which made the socketpair and sends, is invisible to it.

use peerpool::ipc::{Channel, IpcError, PeerCheck};
use rustix::fd::AsFd;
use std::io::Read;
use std::process::{Command, Stdio};

const CHILD_ENV: &str = "PEERPOOL_TEST_PID_NAMESPACE_CHILD";
const TEST: &str = "a_peer_outside_our_pid_namespace_has_pid_0";
const PASSED: &str = "pid namespace checks passed";

#[test]
fn a_peer_outside_our_pid_namespace_has_pid_0() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return in_the_namespace();
    }
    if !rustix::process::geteuid().is_root() {
        println!("skipped: needs root to make a pid namespace");
        return;
    }
    match Command::new("unshare").args(["--pid", "--fork", "true"]).stderr(Stdio::null()).status() {
        Ok(status) if status.success() => {}
        other => {
            println!("skipped: `unshare --pid --fork` does not work here ({other:?})");
            return;
        }
    }
    let (ours, theirs) = Channel::pair().unwrap();
    let mut child = Command::new("unshare")
        .args(["--pid", "--fork", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::from(theirs.into_fd()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (_reader, writer) = rustix::pipe::pipe().unwrap();
    ours.send(b"from outside", &[writer.as_fd()]).unwrap();
    let mut stdout = String::new();
    let mut stderr = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success() && stdout.contains(PASSED), "{status}\n{stdout}\n{stderr}");
}

/// The child's side: its parent made the socketpair and sends from outside the namespace.
fn in_the_namespace() {
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().unwrap();
    let channel = Channel::from_fd(stdin).unwrap();
    assert_eq!(channel.peer_credentials().unwrap().pid, 0, "SO_PEERCRED of an invisible process");
    let message = channel.recv().expect("a same-uid peer passes whatever its pid");
    assert_eq!((message.sender.pid, message.bytes.as_slice(), message.fds.len()), (0, &b"from outside"[..], 1));
    for pid in [0, 1] {
        let picky =
            Channel::from_fd(channel.as_fd().try_clone_to_owned().unwrap()).unwrap().with_peer(PeerCheck::pid(pid));
        let refused = picky.send(b"to whom?", &[]).unwrap_err();
        assert!(matches!(refused, IpcError::CredentialMismatch { found_pid: 0, .. }), "pid {pid}: {refused:?}");
        assert!(refused.to_string().contains("outside our pid namespace"), "{refused}");
    }
    println!("{PASSED}");
}
