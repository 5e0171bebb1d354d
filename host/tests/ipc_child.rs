//! A real second process: the test binary re-executes itself with `PEERPOOL_IPC_CHILD` set and
//! a filter to one `role_*` test, which receives over the socketpair end it got as stdin.
//! The `role_*` tests do nothing in a normal run.

use peerpool::ipc::{Channel, FdKind, IpcError, PeerCheck};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::FdFlags;
use rustix::process::{Resource, Rlimit};
use std::fs::File;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ROLE: &str = "PEERPOOL_IPC_CHILD";
const PATIENCE: Option<Duration> = Some(Duration::from_secs(20));

/// Runs test `role` of this binary in a child whose stdin is `end`.
fn spawn_role(role: &str, end: Channel) -> Child {
    Command::new(std::env::current_exe().expect("own path"))
        .args([role, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .stdin(Stdio::from(end.into_fd()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child")
}

fn expect_success(child: Child) {
    let output = child.wait_with_output().expect("wait for child");
    assert!(
        output.status.success(),
        "child failed: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// In a child for `role`: the channel from stdin, trusting only the parent. `None` elsewhere.
fn child_channel(role: &str) -> Option<Channel> {
    if std::env::var(ROLE).ok()? != role {
        return None;
    }
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().expect("dup stdin");
    let channel = Channel::from_fd(stdin).expect("stdin is the channel");
    channel.set_timeout(PATIENCE).expect("timeout");
    Some(channel.with_peer(PeerCheck::pid(std::os::unix::process::parent_id())))
}

/// In the parent: a connected pair, the parent's end waiting at most `PATIENCE`, the other end
/// for a child. `None` in a child.
fn parent_channel() -> Option<(Channel, Channel)> {
    if std::env::var_os(ROLE).is_some() {
        return None;
    }
    let (parent, end) = Channel::pair().unwrap();
    parent.set_timeout(PATIENCE).unwrap();
    Some((parent, end))
}

#[test]
fn child_receives_an_fd_over_an_inherited_socketpair() {
    let Some((parent, end)) = parent_channel() else { return };
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let child = spawn_role("role_prove_receipt", end);
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
    expect_success(child);
}

#[test]
fn role_prove_receipt() {
    let Some(channel) = child_channel("role_prove_receipt") else { return };
    let message = channel.recv().unwrap().expect_fds(&[FdKind::Fifo]).unwrap();
    let [fd]: [OwnedFd; 1] = message.fds.try_into().expect("one fd");
    assert!(rustix::io::fcntl_getfd(&fd).unwrap().contains(FdFlags::CLOEXEC));
    let text = String::from_utf8(message.bytes).unwrap();
    write!(File::from(fd), "child {} received: {text}", std::process::id()).unwrap();
    channel.send(b"done", &[]).unwrap();
}

#[test]
fn child_out_of_fds_reports_truncation() {
    let Some((parent, end)) = parent_channel() else { return };
    let child = spawn_role("role_out_of_fds", end);
    // Wait until the child has lowered its fd limit, then send it an fd it cannot take.
    assert_eq!(parent.recv().unwrap().bytes, b"ready");
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    parent.send(b"one fd", &[writer.as_fd()]).unwrap();
    drop(writer);
    assert_eq!(parent.recv().unwrap().bytes, b"truncated");
    let mut rest = String::new();
    File::from(reader).read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "no write end may survive in the child");
    expect_success(child);
}

#[test]
fn role_out_of_fds() {
    let Some(channel) = child_channel("role_out_of_fds") else { return };
    // The kernel gives out the lowest free number; a limit at it leaves no room for one more.
    let lowest_free = rustix::io::fcntl_dupfd_cloexec(&channel, 0).unwrap();
    let limit = Rlimit {
        current: Some(rustix::fd::AsRawFd::as_raw_fd(&lowest_free) as u64),
        ..rustix::process::getrlimit(Resource::Nofile)
    };
    drop(lowest_free);
    let saved = rustix::process::getrlimit(Resource::Nofile);
    channel.send(b"ready", &[]).unwrap();
    rustix::process::setrlimit(Resource::Nofile, limit).unwrap();
    let refused = channel.recv();
    rustix::process::setrlimit(Resource::Nofile, saved).unwrap();
    assert_eq!(refused.unwrap_err(), IpcError::FdsTruncated { sent: 1, arrived: 0 });
    channel.send(b"truncated", &[]).unwrap();
}
