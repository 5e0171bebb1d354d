//! Child processes for checks that may kill their CUDA context (a kernel touching memory it
//! may not access): one runner with a timeout, and the one report line such a child prints,
//! shared by `peerpool check` and the fixtures' sandboxed trials.
//!
//! The child runs in its own process group. When it exits, or when the time is up, the whole
//! group is killed, so a grandchild holding the output pipes can neither stretch the call past
//! its timeout nor outlive it. Output is read as bytes, and the report line is found in the
//! bytes: a stray non-UTF-8 byte cannot hide it (text is made lossily, for display only).

use crate::ipc::ShareError;
use crate::{CudaError, Error, GrantError, System};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What starts the one line a child reports on, followed by the [`ChildReport`] as JSON.
pub const REPORT_PREFIX: &str = "peerpool-child-report: ";
/// Bytes kept of each output stream: stdout's first ones (the report line comes early),
/// stderr's last ones (a panic message comes last). The rest is read and dropped.
pub const OUTPUT_LIMIT: usize = 1 << 20;
/// How often the runner looks whether the child has exited while its pipes are quiet.
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

/// Runs `command` (stdin closed, stdout and stderr captured, in a new process group) and
/// returns within `timeout` (plus the time to reap it), its whole process group gone.
pub fn run(mut command: Command, timeout: Duration) -> std::io::Result<Finished> {
    let deadline = Instant::now().checked_add(timeout);
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn()?;
    let group = Pid::from_child(&child);
    let mut streams = [child.stdout.take().map(OwnedFd::from), child.stderr.take().map(OwnedFd::from)];
    let mut output = [Capture::new(false), Capture::new(true)];
    for fd in streams.iter().flatten() {
        rustix::fs::fcntl_setfl(fd, OFlags::NONBLOCK)?;
    }
    let mut exited = false;
    let timed_out = loop {
        // Looked at without reaping, so the group id cannot be reused before the kill below.
        if !exited && rustix::process::waitid(WaitId::Pid(group), exit_options())?.is_some() {
            exited = true;
            kill_group(group);
        }
        if exited && streams.iter().all(Option::is_none) {
            break false;
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left == Some(Duration::ZERO) {
            kill_group(group);
            break !exited;
        }
        let wait = left.map_or(TICK, |left| left.min(TICK));
        drain_ready(&mut streams, &mut output, wait)?;
    };
    kill_group(group);
    let status = child.wait()?;
    let [stdout, stderr] = output.map(Capture::into_bytes);
    Ok(if timed_out { Finished::TimedOut { stdout, stderr } } else { Finished::Exited { status, stdout, stderr } })
}

fn exit_options() -> WaitIdOptions {
    WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT
}

fn kill_group(group: Pid) {
    // ESRCH: nobody is left in the group.
    let _ = rustix::process::kill_process_group(group, Signal::KILL);
}

/// Waits up to `wait` for output, then reads what is there; a stream at its end is closed.
fn drain_ready(streams: &mut [Option<OwnedFd>; 2], output: &mut [Capture; 2], wait: Duration) -> std::io::Result<()> {
    let open: Vec<usize> = (0..2).filter(|&i| streams[i].is_some()).collect();
    if open.is_empty() {
        std::thread::sleep(wait);
        return Ok(());
    }
    let mut fds: Vec<PollFd<'_>> =
        open.iter().filter_map(|&i| streams[i].as_ref()).map(|fd| PollFd::new(fd, PollFlags::IN)).collect();
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

/// What a check run in a child process may return: any error; driver errors are found inside
/// peerpool's types.
pub type ChildError = Box<dyn std::error::Error + Send + Sync>;

/// What the check in the child returned: the one line the child prints after [`REPORT_PREFIX`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ChildReport {
    /// The check returned `Ok`.
    Ok,
    /// A driver call failed.
    CudaError {
        /// The call, e.g. `"cuStreamSynchronize"`.
        call: String,
        /// The `CudaCode` name.
        code: String,
        /// Whether the error was sticky.
        sticky: bool,
    },
    /// Another peerpool error, or a failed assertion in the child.
    Failed {
        /// The error, displayed.
        message: String,
    },
}

impl ChildReport {
    /// The report for a check's result: a driver error inside any of peerpool's error types
    /// (one per layer, each saying where its driver error is through `cuda()`) is reported as
    /// that driver error.
    pub fn from_result(result: Result<(), ChildError>) -> ChildReport {
        let Err(error) = result else { return ChildReport::Ok };
        fn inside<E: std::error::Error + 'static>(
            error: &ChildError,
            cuda: fn(&E) -> Option<&CudaError>,
        ) -> Option<&CudaError> {
            error.downcast_ref::<E>().and_then(cuda)
        }
        let cuda = inside(&error, CudaError::cuda)
            .or_else(|| inside(&error, Error::cuda))
            .or_else(|| inside(&error, GrantError::cuda))
            .or_else(|| inside(&error, ShareError::cuda));
        match cuda {
            Some(e) => ChildReport::CudaError { call: e.call.into(), code: e.code_name(), sticky: e.sticky },
            None => ChildReport::Failed { message: error.to_string() },
        }
    }

    /// The line the child prints: [`REPORT_PREFIX`] and the report as JSON.
    pub fn line(&self) -> String {
        // Serialising strings and a bool cannot fail; an empty object would read as no report.
        format!("{REPORT_PREFIX}{}", serde_json::to_string(self).unwrap_or_default())
    }

    /// The first report line in a child's stdout, wherever it is among other bytes.
    pub fn find(stdout: &[u8]) -> Option<ChildReport> {
        stdout
            .split(|&b| b == b'\n')
            .filter_map(|line| line.strip_prefix(REPORT_PREFIX.as_bytes()))
            .find_map(|json| serde_json::from_slice(json.trim_ascii_end()).ok())
    }
}

/// How a child that was to report ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildOutcome {
    /// It ran the check and reported.
    Reported(ChildReport),
    /// It did not finish in time and was killed, with its process group.
    TimedOut {
        /// The timeout.
        after: Duration,
    },
    /// It exited without a report (a crash, a panic, a signal).
    NoReport {
        /// Its exit status, displayed.
        status: String,
        /// The last lines of what it wrote to stderr.
        stderr: String,
    },
    /// It could not be started.
    SpawnFailed(String),
}

impl ChildOutcome {
    /// `Ok` when the child reported exactly this CUDA error code (by name), sticky or not as given.
    pub fn expect_cuda_error(&self, code: &str, sticky: bool) -> Result<(), String> {
        match self {
            ChildOutcome::Reported(ChildReport::CudaError { code: c, sticky: s, .. }) if c == code && *s == sticky => {
                Ok(())
            }
            other => Err(format!("expected the child to fail with {code} (sticky: {sticky}), got {other:?}")),
        }
    }
}

/// What starts the line in which a child on a simulated machine reports its projected wall
/// time (nanoseconds): the time its parent waits for it there ([`run_reporting_timed`]).
pub const ELAPSED_PREFIX: &str = "peerpool-child-wall-ns: ";

/// The line a child on a simulated machine prints with its projected wall time.
pub fn wall_line(wall: Duration) -> String {
    format!("{ELAPSED_PREFIX}{}", wall.as_nanos())
}

/// The projected wall time a child printed ([`wall_line`]), if it did.
pub fn find_wall(stdout: &[u8]) -> Option<Duration> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(ELAPSED_PREFIX.as_bytes()))
        .find_map(|n| std::str::from_utf8(n.trim_ascii_end()).ok()?.parse::<u64>().ok())
        .map(Duration::from_nanos)
}

/// Runs `command`, a child that prints a [`ChildReport`] line, for at most `timeout`.
pub fn run_reporting(command: Command, timeout: Duration) -> ChildOutcome {
    run_reporting_timed(command, timeout).0
}

/// [`run_reporting`], with the projected wall time the child printed when it ran on a
/// simulated machine (a caller with a [`Timeline`](crate::driver::Timeline) charges it to its
/// thread: the child ran on its own simulator, whose clock the parent's never saw).
pub fn run_reporting_timed(command: Command, timeout: Duration) -> (ChildOutcome, Option<Duration>) {
    match run(command, timeout) {
        Err(e) => (ChildOutcome::SpawnFailed(e.to_string()), None),
        Ok(Finished::TimedOut { .. }) => (ChildOutcome::TimedOut { after: timeout }, None),
        Ok(Finished::Exited { status, stdout, stderr }) => (reported(status, &stdout, &stderr), find_wall(&stdout)),
    }
}

/// Set in a child that sees only one ordered pair of GPUs: the owner's and the accessor's
/// UUIDs (`GPU-...,GPU-...`), as its `CUDA_VISIBLE_DEVICES` lists them.
pub const PAIR_ENV: &str = "PEERPOOL_CHILD_PAIR";

/// Makes `command`'s child see only `owner` and `accessor` of `system`, by UUID (its `cuInit`
/// then sets up two GPUs, not the machine's every one), and tells it which is which
/// ([`PAIR_ENV`], read by [`pair_here`]). Without both UUIDs the child sees what this process
/// sees, and goes by ordinals.
pub fn see_only_pair(command: &mut Command, system: &System, (owner, accessor): (usize, usize)) {
    if let (Ok(o), Ok(a)) = (system.uuid(owner), system.uuid(accessor)) {
        let pair = format!("{o},{a}");
        command.env("CUDA_VISIBLE_DEVICES", &pair).env(PAIR_ENV, &pair);
    }
}

/// In a child started by [`see_only_pair`]: the owner's and the accessor's UUIDs, or `None`
/// in a process no parent told of a pair; an error when [`PAIR_ENV`] is not UTF-8.
pub fn pair_uuids() -> crate::Result<Option<(String, String)>> {
    let pair = crate::env::var(PAIR_ENV).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    Ok(pair.and_then(|pair| {
        let (owner, accessor) = pair.split_once(',')?;
        Some((owner.to_string(), accessor.to_string()))
    }))
}

/// In a child: the pair its parent named `(owner, accessor)` in the parent's numbering, in
/// this process's numbering (found by [`pair_uuids`] where the parent gave them).
pub fn pair_here(system: &System, (owner, accessor): (usize, usize)) -> crate::Result<(usize, usize)> {
    let Some((o, a)) = pair_uuids()? else { return Ok((owner, accessor)) };
    let find = |uuid: &str, parent: usize| {
        let missing = || Error::InvalidArgument(format!("gpu{parent} ({uuid}) is not a GPU this child sees"));
        system.ordinal_of_uuid(uuid)?.ok_or_else(missing)
    };
    Ok((find(&o, owner)?, find(&a, accessor)?))
}

fn reported(status: ExitStatus, stdout: &[u8], stderr: &[u8]) -> ChildOutcome {
    match ChildReport::find(stdout) {
        Some(report) => ChildOutcome::Reported(report),
        None => {
            let stderr = String::from_utf8_lossy(stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            let stderr = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
            ChildOutcome::NoReport { status: status.to_string(), stderr }
        }
    }
}
