//! [`IpcError`]: everything the fd-passing side of IPC can refuse. The sharing API returns it
//! inside [`ShareError`](super::ShareError), the IPC layer's error.

use super::fd_kind::FdKind;
use rustix::io::Errno;

/// Why a send, a receive, a listener or an fd check failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpcError {
    /// The peer is not who the caller trusts: another uid, or not the expected pid.
    #[error(
        "peer credentials mismatch: expected uid {expected_uid}{}, found uid {found_uid} pid {found_pid}{}",
        expected_pid.map(|p| format!(" pid {p}")).unwrap_or_default(),
        if *found_pid == 0 { " (a process outside our pid namespace)" } else { "" }
    )]
    CredentialMismatch {
        /// Our uid (the only one trusted).
        expected_uid: u32,
        /// The pid the caller named, if any.
        expected_pid: Option<u32>,
        /// The peer's uid.
        found_uid: u32,
        /// The peer's pid (0: in a pid namespace we cannot see).
        found_pid: u32,
    },
    /// A message arrived without the kernel's record of its sender (SCM_CREDENTIALS).
    #[error("message arrived without the sender's credentials")]
    NoCredentials,
    /// The other end is closed: end of file on receive, a broken pipe on send.
    #[error("peer closed the connection")]
    PeerClosed,
    /// The message's bytes did not fit the receiver's limit; the kernel dropped the rest.
    #[error("message truncated: {len} bytes sent, at most {limit} accepted")]
    Truncated {
        /// Bytes the sender sent (payload and header).
        len: usize,
        /// Bytes the receiver accepts (payload and header).
        limit: usize,
    },
    /// The kernel dropped file descriptors the sender attached (MSG_CTRUNC).
    #[error("file descriptors truncated: {arrived} of {sent} arrived")]
    FdsTruncated {
        /// Fds the sender announced.
        sent: usize,
        /// Fds that arrived (and were closed).
        arrived: usize,
    },
    /// More fds than allowed: the receiver's limit, or the kernel's per-message maximum on send.
    #[error("{count} file descriptors, at most {limit} allowed")]
    TooManyFds {
        /// How many were sent or attempted.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A payload larger than one message may carry; refused before sending.
    #[error("payload of {len} bytes, at most {limit} per message")]
    PayloadTooLarge {
        /// Payload bytes.
        len: usize,
        /// The per-message maximum.
        limit: usize,
    },
    /// The bytes are not a peerpool message: another protocol, version or a corrupt header.
    #[error("malformed message: {0}")]
    Malformed(&'static str),
    /// A file descriptor of the wrong kind, e.g. a regular file where a device handle belongs.
    #[error("file descriptor is {found}, expected {}", kinds(expected))]
    WrongFdKind {
        /// Kinds the caller accepts.
        expected: &'static [FdKind],
        /// What `fstat` reported.
        found: FdKind,
    },
    /// A timeout set with `set_timeout` expired.
    #[error("{op} timed out")]
    TimedOut {
        /// The operation, e.g. `"recvmsg"`.
        op: &'static str,
    },
    /// A system call failed.
    #[error("{op} failed: {errno}")]
    Io {
        /// The operation, e.g. `"bind"`.
        op: &'static str,
        /// What it returned.
        errno: Errno,
    },
}

impl IpcError {
    /// An [`IpcError::Io`] for `op`; timeouts and a gone peer get their own variants.
    pub(crate) fn io(op: &'static str, errno: Errno) -> Self {
        match errno {
            Errno::PIPE | Errno::CONNRESET => IpcError::PeerClosed,
            Errno::AGAIN => IpcError::TimedOut { op },
            _ => IpcError::Io { op, errno },
        }
    }
}

fn kinds(list: &[FdKind]) -> String {
    let names: Vec<String> = list.iter().map(|k| k.to_string()).collect();
    if names.is_empty() { "nothing".to_owned() } else { names.join(" or ") }
}
