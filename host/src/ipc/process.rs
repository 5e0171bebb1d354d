//! A second process joined by a [`Channel`]: the parent hands one end of a socketpair to the
//! child as its stdin, so no socket file exists and no other process can connect.

use super::channel::Channel;
use super::cred::PeerCheck;
use super::error::IpcError;
use rustix::fd::AsFd;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Spawns `command` with one end of a new channel as its stdin and returns the other end.
///
/// The command is consumed so that its copy of the child's end closes at once: a child that
/// dies then reads as [`IpcError::PeerClosed`], not as silence until a timeout. Our end trusts
/// our uid: a socketpair's `SO_PEERCRED` names its creator (us), so a pid can only be checked
/// on receipt (`channel.with_peer(PeerCheck::pid(child.id()))` before a receive).
///
/// The child leads a process group of its own, so that [`wait_or_kill`] ends whatever it
/// started too.
pub fn spawn_with_channel(mut command: Command) -> Result<(Channel, Child), IpcError> {
    use std::os::unix::process::CommandExt;
    let (ours, theirs) = Channel::pair()?;
    let child = command.stdin(Stdio::from(theirs.into_fd())).process_group(0).spawn().map_err(|e| IpcError::Io {
        op: "spawn",
        errno: rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::IO),
    })?;
    Ok((ours, child))
}

/// In a child made by [`spawn_with_channel`]: the channel on stdin, trusting only the parent.
/// In a pid namespace where the parent is invisible (pid 0) nothing passes that check: wrap
/// stdin with [`Channel::from_fd`] to trust any process of our uid instead.
pub fn inherited_channel() -> Result<Channel, IpcError> {
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().map_err(|e| IpcError::Io {
        op: "dup stdin",
        errno: rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::BADF),
    })?;
    Ok(Channel::from_fd(stdin)?.with_peer(PeerCheck::pid(std::os::unix::process::parent_id())))
}

/// Waits for `child` at most `timeout`; past it, kills the child's process group (the child and
/// what it started, for a child from [`spawn_with_channel`]), reaps the child and returns `None`.
pub fn wait_or_kill(child: &mut Child, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if start.elapsed() >= timeout {
            // The group is the child's pid when it leads one; otherwise this finds no group.
            if let Some(group) = rustix::process::Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
