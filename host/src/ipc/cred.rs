//! Who is on the other end of a socket, as the kernel attests it, and whom a channel trusts.

use super::error::IpcError;
use super::recvmsg::Credentials;
use rustix::fd::AsFd;

/// Whom a channel trusts: always only our own uid, and one pid where the caller names it.
///
/// Another uid could read the memory an export handle grants, so the uid is not optional.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PeerCheck {
    /// The one process the peer must be, if set.
    pub pid: Option<u32>,
}

impl PeerCheck {
    /// Any process of our uid.
    pub const SAME_UID: PeerCheck = PeerCheck { pid: None };

    /// Only process `pid` (of our uid). A peer whose pid the kernel cannot show us (0) never
    /// passes.
    pub fn pid(pid: u32) -> Self {
        Self { pid: Some(pid) }
    }

    /// Whether `found` passes, with `our_uid` the uid of the same kind (effective or real).
    pub(crate) fn verify(self, found: Credentials, our_uid: u32) -> Result<(), IpcError> {
        // Pid 0 is "not visible from here", never a match for a named process.
        if found.uid == our_uid && self.pid.is_none_or(|pid| found.pid != 0 && pid == found.pid) {
            return Ok(());
        }
        Err(IpcError::CredentialMismatch {
            expected_uid: our_uid,
            expected_pid: self.pid,
            found_uid: found.uid,
            found_pid: found.pid,
        })
    }
}

/// `SO_PEERCRED`: the peer as it was when the connection was made (the connecting process for
/// a listener's connection; for a socketpair, the process that created the pair, on both ends).
/// The uid is the effective one.
pub fn peer_credentials(socket: impl AsFd) -> Result<Credentials, IpcError> {
    super::recvmsg::peer_credentials(socket.as_fd()).map_err(|e| IpcError::io("SO_PEERCRED", e))
}

/// Our effective uid, which `SO_PEERCRED` reports for a peer.
pub(crate) fn our_euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Our real uid, which `SCM_CREDENTIALS` reports for a sender.
pub(crate) fn our_uid() -> u32 {
    rustix::process::getuid().as_raw()
}
