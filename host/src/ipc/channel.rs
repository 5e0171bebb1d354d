//! [`Channel`]: one connected `SOCK_SEQPACKET` Unix socket that carries small messages with
//! file descriptors attached (`SCM_RIGHTS`), checking the peer's credentials both ways.
//!
//! Sequenced packets keep each message whole: its bytes and its fds arrive together or the
//! kernel flags the loss (`MSG_TRUNC`, `MSG_CTRUNC`), and a rejected message never leaves
//! half a message behind in the stream.

use super::cred::{PeerCheck, our_euid, our_uid, peer_credentials};
use super::error::IpcError;
use super::fd_checks::expect_kind;
use super::fd_kind::FdKind;
use super::recvmsg;
use super::recvmsg::Credentials;
use super::wire::{self, HEADER_LEN, Limits, MAX_FDS, MAX_PAYLOAD};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::sockopt::{self, Timeout};
use rustix::net::{
    AddressFamily, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::path::Path;
use std::time::Duration;

/// One end of a connection that passes bytes and file descriptors.
///
/// Every socket it wraps has `SO_PASSCRED` set from its creation on, so each received message
/// carries the kernel's record of the process that sent it.
#[derive(Debug)]
pub struct Channel {
    socket: OwnedFd,
    peer: PeerCheck,
    limits: Limits,
}

/// A received message: its payload, the fds that came with it (close-on-exec), and its sender.
#[derive(Debug)]
pub struct Message {
    /// The payload, e.g. a pool's 64-byte export data.
    pub bytes: Vec<u8>,
    /// The file descriptors, in the order they were sent.
    pub fds: Vec<OwnedFd>,
    /// Who sent it (`SCM_CREDENTIALS`: the sending process at the time of sending; real uid).
    pub sender: Credentials,
}

impl Message {
    /// The message, if every fd is one of `allowed`; otherwise it is dropped, fds closed.
    pub fn expect_fds(self, allowed: &'static [FdKind]) -> Result<Message, IpcError> {
        for fd in &self.fds {
            expect_kind(fd, allowed)?;
        }
        Ok(self)
    }
}

impl Channel {
    /// A connected pair, e.g. for a parent and the child it spawns (hand one end to the child as
    /// its stdin with `Stdio::from(end.into_fd())`, then [`Channel::from_fd`] there).
    ///
    /// Both ends' `SO_PEERCRED` names the process that called this, for the pair's whole life,
    /// so a pid expectation on the sending side can only be this process; the receiving side
    /// sees the real sender of each message.
    pub fn pair() -> Result<(Channel, Channel), IpcError> {
        let (a, b) = rustix::net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
            .map_err(|e| IpcError::io("socketpair", e))?;
        Ok((Channel::wrap(a)?, Channel::wrap(b)?))
    }

    /// A channel over an inherited or accepted socket, which must be a Unix `SOCK_SEQPACKET` one.
    pub fn from_fd(socket: OwnedFd) -> Result<Channel, IpcError> {
        let domain = sockopt::socket_domain(&socket).map_err(|e| IpcError::io("SO_DOMAIN", e))?;
        let kind = sockopt::socket_type(&socket).map_err(|e| IpcError::io("SO_TYPE", e))?;
        if domain != AddressFamily::UNIX || kind != SocketType::SEQPACKET {
            return Err(IpcError::Malformed("not a Unix SOCK_SEQPACKET socket"));
        }
        Channel::wrap(socket)
    }

    /// Connects to a [`Listener`](super::Listener)'s socket file.
    pub fn connect(path: &Path) -> Result<Channel, IpcError> {
        let address = SocketAddrUnix::new(path).map_err(|e| IpcError::io("socket path", e))?;
        let socket = rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
            .map_err(|e| IpcError::io("socket", e))?;
        // Before connecting, so that nothing the peer sends can arrive without credentials.
        let channel = Channel::wrap(socket)?;
        retry(|| rustix::net::connect(&channel.socket, &address)).map_err(|e| IpcError::io("connect", e))?;
        Ok(channel)
    }

    /// `socket` with `SO_PASSCRED` set, trusting our uid and applying the default limits and
    /// [`DEFAULT_TIMEOUT`](super::DEFAULT_TIMEOUT).
    pub(crate) fn wrap(socket: OwnedFd) -> Result<Channel, IpcError> {
        sockopt::set_socket_passcred(&socket, true).map_err(|e| IpcError::io("SO_PASSCRED", e))?;
        let channel = Channel { socket, peer: PeerCheck::SAME_UID, limits: Limits::default() };
        channel.set_timeout(Some(super::DEFAULT_TIMEOUT))?;
        Ok(channel)
    }

    /// The same channel, trusting only `peer` (our uid is always required).
    pub fn with_peer(mut self, peer: PeerCheck) -> Channel {
        self.peer = peer;
        self
    }

    /// The same channel, accepting at most `limits` per received message.
    pub fn with_limits(mut self, limits: Limits) -> Channel {
        self.limits = limits;
        self
    }

    /// Whom this channel trusts.
    pub fn peer(&self) -> PeerCheck {
        self.peer
    }

    /// What [`Channel::recv`] accepts.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Sets how long a send or a receive may block (`None`: forever); expiry is
    /// [`IpcError::TimedOut`]. Every channel starts with
    /// [`DEFAULT_TIMEOUT`](super::DEFAULT_TIMEOUT), so a silent peer cannot stall it for good.
    pub fn set_timeout(&self, timeout: Option<Duration>) -> Result<(), IpcError> {
        for (id, op) in [(Timeout::Recv, "SO_RCVTIMEO"), (Timeout::Send, "SO_SNDTIMEO")] {
            sockopt::set_socket_timeout(&self.socket, id, timeout).map_err(|e| IpcError::io(op, e))?;
        }
        Ok(())
    }

    /// The receive timeout in force (`None`: forever).
    pub fn timeout(&self) -> Result<Option<Duration>, IpcError> {
        sockopt::socket_timeout(&self.socket, Timeout::Recv).map_err(|e| IpcError::io("SO_RCVTIMEO", e))
    }

    /// `SO_PEERCRED` for this connection (see [`peer_credentials`]).
    pub fn peer_credentials(&self) -> Result<Credentials, IpcError> {
        peer_credentials(&self.socket)
    }

    /// Sends `bytes` with `fds` attached, after checking that the peer passes [`Channel::peer`]
    /// (`SO_PEERCRED`, effective uid). Nothing is sent when the check fails.
    ///
    /// The fds stay open here: the receiver gets duplicates.
    pub fn send(&self, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> Result<(), IpcError> {
        if bytes.len() > MAX_PAYLOAD {
            return Err(IpcError::PayloadTooLarge { len: bytes.len(), limit: MAX_PAYLOAD });
        }
        if fds.len() > MAX_FDS {
            return Err(IpcError::TooManyFds { count: fds.len(), limit: MAX_FDS });
        }
        self.peer.verify(self.peer_credentials()?, our_euid())?;

        let header = wire::encode(bytes.len(), fds.len());
        let iov = [IoSlice::new(&header), IoSlice::new(bytes)];
        let mut space =
            vec![MaybeUninit::uninit(); if fds.is_empty() { 0 } else { rustix::cmsg_space!(ScmRights(fds.len())) }];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
            return Err(IpcError::Io { op: "SCM_RIGHTS", errno: Errno::NOBUFS });
        }
        let sent = retry(|| rustix::net::sendmsg(&self.socket, &iov, &mut control, SendFlags::NOSIGNAL))
            .map_err(|e| IpcError::io("sendmsg", e))?;
        if sent != HEADER_LEN + bytes.len() {
            // A sequenced packet goes whole or not at all; anything else is not our protocol.
            return Err(IpcError::Io { op: "sendmsg", errno: Errno::MSGSIZE });
        }
        Ok(())
    }

    /// Receives one message, checking its sender against [`Channel::peer`] (`SCM_CREDENTIALS`,
    /// real uid) and its size against [`Channel::limits`].
    ///
    /// Received fds are close-on-exec from the start (`MSG_CMSG_CLOEXEC`), and every fd that
    /// arrived with a rejected message is closed before the error returns.
    pub fn recv(&self) -> Result<Message, IpcError> {
        let limits = self.limits.clamped();
        let mut frame = vec![0u8; HEADER_LEN + limits.max_bytes];
        // Every fd is owned before the message is judged, so that every early return closes them.
        let received =
            recvmsg::recv(self.socket.as_fd(), &mut frame, limits.max_fds).map_err(|e| IpcError::io("recvmsg", e))?;
        let fds = received.fds;
        // End of file carries no credentials; an empty datagram from a live peer does.
        let sender = match (received.bytes, received.sender) {
            (0, None) => return Err(IpcError::PeerClosed),
            (0, Some(_)) => return Err(IpcError::Malformed("an empty datagram (every peerpool message has a header)")),
            (_, sender) => sender.ok_or(IpcError::NoCredentials)?,
        };
        self.peer.verify(sender, our_uid())?;
        if received.truncated || received.bytes > frame.len() {
            return Err(IpcError::Truncated { len: received.bytes, limit: frame.len() });
        }
        frame.truncate(received.bytes);
        let header = wire::decode(&frame)?;
        if header.fds > limits.max_fds {
            return Err(IpcError::TooManyFds { count: header.fds, limit: limits.max_fds });
        }
        if received.fds_truncated || fds.len() < header.fds {
            return Err(IpcError::FdsTruncated { sent: header.fds, arrived: fds.len() });
        }
        if fds.len() > header.fds {
            return Err(IpcError::Malformed("more fds than the header announces"));
        }
        frame.drain(..HEADER_LEN);
        Ok(Message { bytes: frame, fds, sender })
    }

    /// The socket, e.g. to hand to a child process.
    pub fn into_fd(self) -> OwnedFd {
        self.socket
    }
}

impl AsFd for Channel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// `call` again while a signal interrupts it.
pub(crate) fn retry<T>(mut call: impl FnMut() -> rustix::io::Result<T>) -> rustix::io::Result<T> {
    loop {
        match call() {
            Err(Errno::INTR) => continue,
            result => return result,
        }
    }
}
