//! `ipc::spawn_with_channel`, `inherited_channel` and `wait_or_kill` with real child processes
//! (this test binary re-executed, one `role_*` test selected): a reply comes back, a dead child
//! reads as a closed peer at once, and a hung child is killed at its timeout.

use peerpool::ipc::{Channel, IpcError, PeerCheck, inherited_channel, spawn_with_channel, wait_or_kill};
use rustix::fd::AsFd;
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "PEERPOOL_IPC_PROCESS_ROLE";

fn child(role: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("own path"));
    command.args([role, "--exact", "--nocapture", "--test-threads=1"]).env(ROLE, role).stdout(Stdio::null());
    command
}

/// A child running `role` over a channel that times out after `timeout`; `None` in a child
/// itself, where only its own role runs.
fn spawn_role(role: &str, timeout: Duration) -> Option<(Channel, Child)> {
    if std::env::var_os(ROLE).is_some() {
        return None;
    }
    let (channel, process) = spawn_with_channel(child(role)).unwrap();
    channel.set_timeout(Some(timeout)).unwrap();
    Some((channel, process))
}

fn is_role(role: &str) -> bool {
    std::env::var(ROLE).is_ok_and(|r| r == role)
}

#[test]
fn a_child_replies_over_its_inherited_channel() {
    let Some((channel, mut process)) = spawn_role("role_reply", Duration::from_secs(20)) else { return };
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    channel.send(b"write here", &[writer.as_fd()]).unwrap();
    drop(writer);
    let reply = channel.with_peer(PeerCheck::pid(process.id())).recv().unwrap();
    assert_eq!(reply.bytes, b"written");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::fs::File::from(reader), &mut text).unwrap();
    assert_eq!(text, "from the child");
    assert!(wait_or_kill(&mut process, Duration::from_secs(20)).unwrap().is_some_and(|s| s.success()));
}

#[test]
fn role_reply() {
    if !is_role("role_reply") {
        return;
    }
    let channel = inherited_channel().unwrap();
    let message = channel.recv().unwrap();
    assert_eq!(message.bytes, b"write here");
    let fd = message.fds.into_iter().next().unwrap();
    std::fs::File::from(fd).write_all(b"from the child").unwrap();
    channel.send(b"written", &[]).unwrap();
}

#[test]
fn a_dead_child_reads_as_closed_at_once() {
    let Some((channel, mut process)) = spawn_role("role_exit", Duration::from_secs(20)) else { return };
    let start = Instant::now();
    assert_eq!(channel.recv().unwrap_err(), IpcError::PeerClosed);
    assert!(start.elapsed() < Duration::from_secs(15), "not a timeout");
    assert!(wait_or_kill(&mut process, Duration::from_secs(20)).unwrap().is_some());
}

#[test]
fn role_exit() {
    if is_role("role_exit") {
        std::process::exit(0);
    }
}

#[test]
fn a_hung_child_is_killed_at_its_timeout() {
    let Some((channel, mut process)) = spawn_role("role_hang", Duration::from_millis(200)) else { return };
    assert!(matches!(channel.recv(), Err(IpcError::TimedOut { .. })));
    let start = Instant::now();
    assert_eq!(wait_or_kill(&mut process, Duration::from_millis(300)).unwrap(), None);
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(process.try_wait().unwrap().is_some(), "killed and reaped");
}

#[test]
fn role_hang() {
    if is_role("role_hang") {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// Whether process `pid` is gone or a zombie (dead, waiting for its parent to reap it).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn the_timeout_ends_what_the_child_started_too() {
    if std::env::var_os(ROLE).is_some() {
        return;
    }
    // The child starts a grandchild that would outlive it, says its pid and waits.
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 60 & echo $!; wait"]).stdout(Stdio::piped());
    let (_channel, mut process) = spawn_with_channel(command).unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(process.stdout.take().unwrap()), &mut line).unwrap();
    let grandchild: u32 = line.trim().parse().unwrap();
    assert!(!dead(grandchild), "the grandchild runs");
    assert_eq!(wait_or_kill(&mut process, Duration::from_millis(200)).unwrap(), None);
    let start = Instant::now();
    while !dead(grandchild) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(dead(grandchild), "the grandchild {grandchild} outlived the timeout");
}
