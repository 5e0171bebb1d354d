//! [`Listener`]: a Unix `SOCK_SEQPACKET` socket file in a [`PrivateDir`], for processes that
//! did not inherit a [`Channel`] (an unrelated process of the same user).

use super::channel::{Channel, retry};
use super::cred::{PeerCheck, our_euid};
use super::error::IpcError;
use super::private_dir::PrivateDir;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::net::sockopt::{self, Timeout};
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A listening socket at `<private dir>/socket`; the file and the directory go on drop.
#[derive(Debug)]
pub struct Listener {
    socket: OwnedFd,
    path: PathBuf,
    peer: PeerCheck,
    // Dropped after `Drop::drop` has removed the socket file, so the directory is empty then.
    dir: PrivateDir,
}

impl Listener {
    /// A listener in a new private directory under [`PrivateDir::default_base`].
    pub fn bind() -> Result<Listener, IpcError> {
        Listener::bind_in(&PrivateDir::default_base())
    }

    /// A listener in a new private directory under `base`. The socket path must fit
    /// `sockaddr_un` (107 bytes), so `base` should be short.
    pub fn bind_in(base: &Path) -> Result<Listener, IpcError> {
        let dir = PrivateDir::create_in(base)?;
        let path = dir.path().join("socket");
        let address = SocketAddrUnix::new(path.as_path()).map_err(|e| IpcError::io("socket path", e))?;
        let socket = rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
            .map_err(|e| IpcError::io("socket", e))?;
        // Accepted sockets inherit it, so credentials ride on messages sent before `accept`.
        sockopt::set_socket_passcred(&socket, true).map_err(|e| IpcError::io("SO_PASSCRED", e))?;
        rustix::net::bind(&socket, &address).map_err(|e| IpcError::io("bind", e))?;
        let listener = Listener { socket, path, peer: PeerCheck::SAME_UID, dir };
        rustix::net::listen(&listener.socket, 16).map_err(|e| IpcError::io("listen", e))?;
        listener.set_timeout(Some(super::DEFAULT_TIMEOUT))?;
        Ok(listener)
    }

    /// The same listener, accepting only `peer` (our uid is always required).
    pub fn with_peer(mut self, peer: PeerCheck) -> Listener {
        self.peer = peer;
        self
    }

    /// The socket file to [`Channel::connect`] to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The private directory holding it.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Sets how long [`Listener::accept`] may block, and the send and receive timeout of the
    /// channels it accepts from then on (`None`: forever). A new listener has
    /// [`DEFAULT_TIMEOUT`](super::DEFAULT_TIMEOUT): a same-uid client that connects and stays
    /// silent cannot stall the accepting side for good.
    pub fn set_timeout(&self, timeout: Option<Duration>) -> Result<(), IpcError> {
        sockopt::set_socket_timeout(&self.socket, Timeout::Recv, timeout).map_err(|e| IpcError::io("SO_RCVTIMEO", e))
    }

    /// The timeout in force (`None`: forever).
    pub fn timeout(&self) -> Result<Option<Duration>, IpcError> {
        sockopt::socket_timeout(&self.socket, Timeout::Recv).map_err(|e| IpcError::io("SO_RCVTIMEO", e))
    }

    /// The next connection, if its process passes the listener's [`PeerCheck`] (`SO_PEERCRED`);
    /// otherwise the connection is closed and the error returned. The channel keeps the check
    /// and the listener's timeout.
    pub fn accept(&self) -> Result<Channel, IpcError> {
        let socket = retry(|| rustix::net::accept_with(&self.socket, SocketFlags::CLOEXEC))
            .map_err(|e| IpcError::io("accept", e))?;
        let channel = Channel::wrap(socket)?.with_peer(self.peer);
        channel.set_timeout(self.timeout()?)?;
        self.peer.verify(channel.peer_credentials()?, our_euid())?;
        Ok(channel)
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = rustix::fs::unlink(&self.path);
    }
}
