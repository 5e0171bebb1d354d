//! The runner: a child in its own process group, watched by a thread of its own from its start
//! until it is reaped.
//!
//! When the child exits, or when its time is up, the whole group is killed, so a grandchild
//! holding the output pipes can neither stretch the call past its timeout nor outlive it; the
//! time is up for the child even while its parent is busy talking to it over a channel. Output
//! is read as bytes into two bounded buffers, so a chatty child never blocks on a full pipe.

use super::outcome::{ChildOutcome, find_wall, reported};
use super::role::ROLE_ENV;
use crate::ipc::{Channel, IpcError};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Bytes kept of each output stream: stdout's first ones (the report line comes early),
/// stderr's last ones (a panic message comes last). The rest is read and dropped.
pub const OUTPUT_LIMIT: usize = 1 << 20;
/// The longest the watcher sleeps between looks at the child, should a wake-up be missed.
const TICK: Duration = Duration::from_millis(10);

/// How a child ended.
#[derive(Debug)]
pub enum Finished {
    /// It exited (or was killed by a signal) with this status and output.
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// What it wrote to stdout (at most [`OUTPUT_LIMIT`] bytes, the first ones).
        stdout: Vec<u8>,
        /// What it wrote to stderr (at most [`OUTPUT_LIMIT`] bytes, the last ones).
        stderr: Vec<u8>,
    },
    /// It ran past the timeout; its process group was killed.
    TimedOut {
        /// What it wrote to stdout until then.
        stdout: Vec<u8>,
        /// What it wrote to stderr until then.
        stderr: Vec<u8>,
    },
}

impl Finished {
    /// What it wrote to stdout.
    pub fn stdout(&self) -> &[u8] {
        match self {
            Finished::Exited { stdout, .. } | Finished::TimedOut { stdout, .. } => stdout,
        }
    }

    /// What it wrote to stderr.
    pub fn stderr(&self) -> &[u8] {
        match self {
            Finished::Exited { stderr, .. } | Finished::TimedOut { stderr, .. } => stderr,
        }
    }

    /// Its exit status; `None` when it was killed at its timeout.
    pub fn status(&self) -> Option<ExitStatus> {
        match self {
            Finished::Exited { status, .. } => Some(*status),
            Finished::TimedOut { .. } => None,
        }
    }
}

/// A child started by [`spawn`] or [`spawn_with_channel`], watched until it ends; its process
/// group is gone once [`Running::wait`] returns.
#[derive(Debug)]
pub struct Running {
    pid: u32,
    timeout: Duration,
    watcher: std::thread::JoinHandle<std::io::Result<Finished>>,
}

impl Running {
    /// The child's pid (its process group's id too), e.g. for a channel's `PeerCheck::pid`.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The timeout it was started with, counted from its start.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Waits until the child has ended (or was killed at its timeout) and was reaped.
    pub fn wait(self) -> std::io::Result<Finished> {
        self.watcher.join().unwrap_or_else(|_| Err(std::io::Error::other("the thread watching the child panicked")))
    }

    /// [`Running::wait`] for a child that prints a [`ChildResult`](super::ChildResult) line:
    /// how it ended, with the projected wall time it printed on a simulated machine.
    pub fn wait_reporting(self) -> (ChildOutcome, Option<Duration>) {
        let timeout = self.timeout;
        timed(self.wait(), timeout)
    }
}

/// Runs `command` (stdin closed, stdout and stderr captured, in a new process group) and
/// returns within `timeout` (plus the time to reap it), its whole process group gone.
pub fn run(command: Command, timeout: Duration) -> std::io::Result<Finished> {
    spawn(command, timeout)?.wait()
}

/// Runs `command`, a child that prints a [`ChildResult`](super::ChildResult) line, for at
/// most `timeout`.
pub fn run_reporting(command: Command, timeout: Duration) -> ChildOutcome {
    run_reporting_timed(command, timeout).0
}

/// [`run_reporting`], with the projected wall time the child printed when it ran on a
/// simulated machine (a caller with a [`Timeline`](crate::driver::Timeline) charges it to its
/// thread: the child ran on its own simulator, whose clock the parent's never saw).
pub fn run_reporting_timed(command: Command, timeout: Duration) -> (ChildOutcome, Option<Duration>) {
    timed(run(command, timeout), timeout)
}

/// How a child run with `timeout` ended, with the projected wall time it printed.
fn timed(finished: std::io::Result<Finished>, timeout: Duration) -> (ChildOutcome, Option<Duration>) {
    match finished {
        Err(e) => (ChildOutcome::SpawnFailed(e.to_string()), None),
        Ok(Finished::TimedOut { .. }) => (ChildOutcome::TimedOut { after: timeout }, None),
        Ok(Finished::Exited { status, stdout, stderr }) => (reported(status, &stdout, &stderr), find_wall(&stdout)),
    }
}

/// Starts `command` as [`run`] does, without waiting for it: its timeout counts from now, and
/// [`Running::wait`] collects how it ended.
pub fn spawn(command: Command, timeout: Duration) -> std::io::Result<Running> {
    start(command, Stdio::null(), timeout)
}

/// Starts `command` as [`spawn`] does, with one end of a new channel as its stdin, and returns
/// the other end: no socket file exists and no other process can connect.
///
/// The command is consumed so that its copy of the child's end closes at once: a child that
/// dies then reads as [`IpcError::PeerClosed`], not as silence until a timeout. Our end trusts
/// our uid: a socketpair's `SO_PEERCRED` names its creator (us), so a pid can only be checked
/// on receipt (`channel.with_peer(PeerCheck::pid(running.id()))` before a receive). The child
/// finds its end with [`inherited_channel`].
pub fn spawn_with_channel(command: Command, timeout: Duration) -> Result<(Channel, Running), IpcError> {
    let (ours, theirs) = Channel::pair()?;
    let running = start(command, Stdio::from(theirs.into_fd()), timeout)
        .map_err(|e| IpcError::Io { op: "spawn", errno: Errno::from_io_error(&e).unwrap_or(Errno::IO) })?;
    Ok((ours, running))
}

/// In a child made by [`spawn_with_channel`]: the channel on stdin, trusting only the parent.
/// In a pid namespace where the parent is invisible (pid 0) nothing passes that check: wrap
/// stdin with [`Channel::from_fd`] to trust any process of our uid instead.
pub fn inherited_channel() -> Result<Channel, IpcError> {
    let stdin = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| IpcError::Io { op: "dup stdin", errno: Errno::from_io_error(&e).unwrap_or(Errno::BADF) })?;
    Ok(Channel::from_fd(stdin)?.with_peer(crate::ipc::PeerCheck::pid(std::os::unix::process::parent_id())))
}

fn start(mut command: Command, stdin: Stdio, timeout: Duration) -> std::io::Result<Running> {
    // A child is a role child only when its command says so; it never inherits our role.
    if !command.get_envs().any(|(name, _)| name == ROLE_ENV) {
        command.env_remove(ROLE_ENV);
    }
    let deadline = Instant::now().checked_add(timeout);
    let mut child = command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn()?;
    let pid = child.id();
    let streams = [child.stdout.take().map(OwnedFd::from), child.stderr.take().map(OwnedFd::from)];
    // From here on the watch owns the child: dropped on any path, it kills the group and reaps.
    let watch = Watch {
        group: Pid::from_child(&child),
        child: Some(child),
        streams,
        output: [Capture::new(false), Capture::new(true)],
        deadline,
    };
    for fd in watch.streams.iter().flatten() {
        rustix::fs::fcntl_setfl(fd, OFlags::NONBLOCK)?;
    }
    let watcher = std::thread::Builder::new().name(format!("child {pid}")).spawn(move || watch.finish())?;
    Ok(Running { pid, timeout, watcher })
}

/// A child being watched: its group, its output so far and its deadline.
struct Watch {
    group: Pid,
    child: Option<Child>,
    streams: [Option<OwnedFd>; 2],
    output: [Capture; 2],
    deadline: Option<Instant>,
}

impl Watch {
    fn finish(mut self) -> std::io::Result<Finished> {
        // A pidfd is readable once the child exits, so its exit wakes the poll below at once;
        // without one (a kernel before 5.3) the watcher looks every tick.
        let mut pidfd = rustix::process::pidfd_open(self.group, PidfdFlags::empty()).ok();
        let mut exited = false;
        let timed_out = loop {
            // Looked at without reaping, so the group id cannot be reused before the kill below.
            if !exited && rustix::process::waitid(WaitId::Pid(self.group), exit_options())?.is_some() {
                exited = true;
                pidfd = None;
                kill_group(self.group);
            }
            if exited && self.streams.iter().all(Option::is_none) {
                break false;
            }
            let left = self.deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                kill_group(self.group);
                break !exited;
            }
            let wait = left.map_or(TICK, |left| left.min(TICK));
            drain_ready(&mut self.streams, &mut self.output, pidfd.as_ref(), wait)?;
        };
        kill_group(self.group);
        let status = match self.child.take() {
            Some(mut child) => child.wait()?,
            None => return Err(std::io::Error::other("the child was reaped twice")),
        };
        let [stdout, stderr] =
            std::mem::replace(&mut self.output, [Capture::new(false), Capture::new(true)]).map(Capture::into_bytes);
        Ok(if timed_out { Finished::TimedOut { stdout, stderr } } else { Finished::Exited { status, stdout, stderr } })
    }
}

impl Drop for Watch {
    /// A watch that did not finish (its thread never started, or an error ended it): the group
    /// is killed and the child reaped, so that nothing it started is left behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(self.group);
            let _ = child.wait();
        }
    }
}

fn exit_options() -> WaitIdOptions {
    WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT
}

fn kill_group(group: Pid) {
    // ESRCH: nobody is left in the group.
    let _ = rustix::process::kill_process_group(group, Signal::KILL);
}

/// Waits up to `wait` for output or the child's exit, then reads what is there; a stream at its
/// end is closed.
fn drain_ready(
    streams: &mut [Option<OwnedFd>; 2],
    output: &mut [Capture; 2],
    pidfd: Option<&OwnedFd>,
    wait: Duration,
) -> std::io::Result<()> {
    let open: Vec<usize> = (0..2).filter(|&i| streams[i].is_some()).collect();
    let mut fds: Vec<PollFd<'_>> = open
        .iter()
        .filter_map(|&i| streams[i].as_ref())
        .chain(pidfd)
        .map(|fd| PollFd::new(fd, PollFlags::IN))
        .collect();
    if fds.is_empty() {
        std::thread::sleep(wait);
        return Ok(());
    }
    let timeout = Timespec::try_from(wait).unwrap_or(Timespec { tv_sec: 0, tv_nsec: 10_000_000 });
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(_) | Err(Errno::INTR) => {}
        Err(e) => return Err(e.into()),
    }
    drop(fds);
    let mut buffer = vec![0u8; 64 * 1024];
    for i in open {
        let Some(fd) = streams[i].as_ref() else { continue };
        loop {
            match rustix::io::read(fd.as_fd(), &mut buffer) {
                Ok(0) => {
                    streams[i] = None;
                    break;
                }
                Ok(n) => output[i].push(&buffer[..n]),
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Output kept within [`OUTPUT_LIMIT`]: the first bytes, or the last.
struct Capture {
    bytes: Vec<u8>,
    keep_last: bool,
}

impl Capture {
    fn new(keep_last: bool) -> Capture {
        Capture { bytes: Vec::new(), keep_last }
    }

    fn push(&mut self, data: &[u8]) {
        if !self.keep_last {
            let room = OUTPUT_LIMIT.saturating_sub(self.bytes.len());
            self.bytes.extend_from_slice(&data[..data.len().min(room)]);
            return;
        }
        self.bytes.extend_from_slice(data);
        // Trimmed in batches, so that keeping the end costs no more than copying once.
        if self.bytes.len() > 2 * OUTPUT_LIMIT {
            self.bytes.drain(..self.bytes.len() - OUTPUT_LIMIT);
        }
    }

    fn into_bytes(mut self) -> Vec<u8> {
        if self.bytes.len() > OUTPUT_LIMIT {
            self.bytes.drain(..self.bytes.len() - OUTPUT_LIMIT);
        }
        self.bytes
    }
}
