//! A channel to a real second process: `child::spawn_with_channel` hands one end of a socketpair
//! to this test binary, run again as its own child in one of the roles below (served by `main`
//! before the harness runs), which finds it with `inherited_channel`. A reply comes back, an fd
//! crosses, a child out of fds reports the truncation, a dead child reads as a closed peer at
//! once, and a hung child is killed at its timeout with whatever it started.

mod role_trials;

use peerpool::child::{ChildError, Finished, Role, Roles, Running, inherited_channel, spawn_with_channel};
use peerpool::ipc::{Channel, FdKind, IpcError, PeerCheck};
use role_trials::roles_or_tests;
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::FdFlags;
use rustix::process::{Resource, Rlimit};
use std::fs::File;
use std::io::{Read, Write};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// Receives a pipe's write end and a text, writes the text there, replies `written`.
const REPLY: Role = Role::new("reply", &[]);
/// Ends at once.
const EXIT: Role = Role::new("exit", &[]);
/// Sleeps past any timeout here.
const HANG: Role = Role::new("hang", &[]);
/// Checks the fd it receives (a FIFO, close-on-exec), writes what it was sent and its pid there.
const PROVE_RECEIPT: Role = Role::new("prove-receipt", &[]);
/// Lowers its fd limit to the lowest free number, then receives an fd it has no room for.
const OUT_OF_FDS: Role = Role::new("out-of-fds", &[]);

const PATIENCE: Duration = Duration::from_secs(20);

fn main() -> ExitCode {
    let roles = Roles::new()
        .reporting(REPLY, |_| reply())
        .reporting(EXIT, |_| Ok(()))
        .reporting(HANG, |_| {
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        })
        .reporting(PROVE_RECEIPT, |_| prove_receipt())
        .reporting(OUT_OF_FDS, |_| out_of_fds());
    roles_or_tests(
        roles,
        &[
            ("a_child_replies_over_its_inherited_channel", a_child_replies_over_its_inherited_channel),
            ("a_dead_child_reads_as_closed_at_once", a_dead_child_reads_as_closed_at_once),
            ("a_hung_child_is_killed_at_its_timeout", a_hung_child_is_killed_at_its_timeout),
            ("the_timeout_ends_what_the_child_started_too", the_timeout_ends_what_the_child_started_too),
            ("child_receives_an_fd_over_an_inherited_socketpair", child_receives_an_fd_over_an_inherited_socketpair),
            ("child_out_of_fds_reports_truncation", child_out_of_fds_reports_truncation),
        ],
    )
}

/// This binary in `role`, over a channel that times out after `patience`; the child's whole
/// call is bounded by `timeout`.
fn spawn_role(role: Role, patience: Duration, timeout: Duration) -> (Channel, Running) {
    let command = role.command().build().expect("this test binary");
    let (channel, child) = spawn_with_channel(command, timeout).unwrap();
    channel.set_timeout(Some(patience)).unwrap();
    (channel, child)
}

/// The child ended by reporting success.
fn succeeded(child: Running) {
    if let Err(e) = child.wait_reporting().0.expect_ok() {
        panic!("{e}");
    }
}

fn a_child_replies_over_its_inherited_channel() {
    let (channel, child) = spawn_role(REPLY, PATIENCE, PATIENCE);
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    channel.send(b"write here", &[writer.as_fd()]).unwrap();
    drop(writer);
    let reply = channel.with_peer(PeerCheck::pid(child.id())).recv().unwrap();
    assert_eq!(reply.bytes, b"written");
    let mut text = String::new();
    File::from(reader).read_to_string(&mut text).unwrap();
    assert_eq!(text, "from the child");
    succeeded(child);
}

fn reply() -> Result<(), ChildError> {
    let channel = inherited_channel()?;
    let message = channel.recv()?;
    if message.bytes != b"write here" {
        return Err(format!("received {:?}", message.bytes).into());
    }
    let fd = message.fds.into_iter().next().ok_or("no fd came")?;
    File::from(fd).write_all(b"from the child")?;
    Ok(channel.send(b"written", &[])?)
}

fn a_dead_child_reads_as_closed_at_once() {
    let (channel, child) = spawn_role(EXIT, PATIENCE, PATIENCE);
    let start = Instant::now();
    assert_eq!(channel.recv().unwrap_err(), IpcError::PeerClosed);
    assert!(start.elapsed() < Duration::from_secs(15), "not a timeout");
    succeeded(child);
}

fn a_hung_child_is_killed_at_its_timeout() {
    let start = Instant::now();
    let (channel, child) = spawn_role(HANG, Duration::from_millis(200), Duration::from_millis(300));
    assert!(matches!(channel.recv(), Err(IpcError::TimedOut { .. })));
    let finished = child.wait().unwrap();
    assert!(matches!(finished, Finished::TimedOut { .. }), "{finished:?}");
    assert!(start.elapsed() < Duration::from_secs(10), "returned after {:?}", start.elapsed());
}

/// Whether process `pid` is gone or a zombie (dead, waiting for its parent to reap it).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn the_timeout_ends_what_the_child_started_too() {
    // The child starts a grandchild that would outlive it, writes its pid to a file and waits.
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild");
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 60 & echo $! > \"$0.new\"; mv \"$0.new\" \"$0\"; wait"]).arg(&pid_file);
    let (_channel, child) = spawn_with_channel(command, Duration::from_millis(500)).unwrap();
    let start = Instant::now();
    while !pid_file.exists() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let grandchild: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(!dead(grandchild), "the grandchild runs");
    assert!(matches!(child.wait().unwrap(), Finished::TimedOut { .. }));
    let start = Instant::now();
    while !dead(grandchild) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(dead(grandchild), "the grandchild {grandchild} outlived the timeout");
}

fn child_receives_an_fd_over_an_inherited_socketpair() {
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let (parent, child) = spawn_role(PROVE_RECEIPT, PATIENCE, PATIENCE);
    let child_pid = child.id();

    parent.send(b"the pool's export data", &[writer.as_fd()]).unwrap();
    drop(writer);
    let mut proof = String::new();
    File::from(reader).read_to_string(&mut proof).unwrap();
    assert_eq!(proof, format!("child {child_pid} received: the pool's export data"));

    // SO_PEERCRED of a socketpair names its creator (us), but each message names its sender.
    assert_eq!(parent.peer_credentials().unwrap().pid, std::process::id());
    let reply = parent.with_peer(PeerCheck::pid(child_pid)).recv().unwrap();
    assert_eq!(reply.bytes, b"done");
    assert_eq!(reply.sender.pid, child_pid);
    succeeded(child);
}

fn prove_receipt() -> Result<(), ChildError> {
    let channel = inherited_channel()?;
    channel.set_timeout(Some(PATIENCE))?;
    let message = channel.recv()?.expect_fds(&[FdKind::Fifo])?;
    let [fd]: [OwnedFd; 1] = message.fds.try_into().map_err(|_| "not one fd")?;
    if !rustix::io::fcntl_getfd(&fd)?.contains(FdFlags::CLOEXEC) {
        return Err("the fd arrived without close-on-exec".into());
    }
    let text = String::from_utf8(message.bytes)?;
    write!(File::from(fd), "child {} received: {text}", std::process::id())?;
    Ok(channel.send(b"done", &[])?)
}

fn child_out_of_fds_reports_truncation() {
    let (parent, child) = spawn_role(OUT_OF_FDS, PATIENCE, PATIENCE);
    // Wait until the child has lowered its fd limit, then send it an fd it cannot take.
    assert_eq!(parent.recv().unwrap().bytes, b"ready");
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    parent.send(b"one fd", &[writer.as_fd()]).unwrap();
    drop(writer);
    assert_eq!(parent.recv().unwrap().bytes, b"truncated");
    let mut rest = String::new();
    File::from(reader).read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "no write end may survive in the child");
    succeeded(child);
}

fn out_of_fds() -> Result<(), ChildError> {
    let channel = inherited_channel()?;
    channel.set_timeout(Some(PATIENCE))?;
    // The kernel gives out the lowest free number; a limit at it leaves no room for one more.
    let lowest_free = rustix::io::fcntl_dupfd_cloexec(&channel, 0)?;
    let limit = Rlimit {
        current: Some(rustix::fd::AsRawFd::as_raw_fd(&lowest_free) as u64),
        ..rustix::process::getrlimit(Resource::Nofile)
    };
    drop(lowest_free);
    let saved = rustix::process::getrlimit(Resource::Nofile);
    channel.send(b"ready", &[])?;
    rustix::process::setrlimit(Resource::Nofile, limit)?;
    let refused = channel.recv();
    rustix::process::setrlimit(Resource::Nofile, saved)?;
    match refused {
        Err(IpcError::FdsTruncated { sent: 1, arrived: 0 }) => Ok(channel.send(b"truncated", &[])?),
        other => Err(format!("expected the fd to be truncated, got {other:?}").into()),
    }
}
