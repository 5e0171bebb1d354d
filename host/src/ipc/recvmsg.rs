//! The two kernel reads that name a peer, `recvmsg` with `SCM_RIGHTS` and `SCM_CREDENTIALS`
//! and `getsockopt(SO_PEERCRED)`, made through libc rather than rustix: rustix's `UCred` holds
//! the pid in a non-zero type, and the kernel reports pid 0 for a peer in a pid namespace we
//! cannot see, so that value must be read as a plain integer.

use rustix::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use rustix::io::Errno;
use std::mem::size_of;

/// A process's identity as the kernel reports it (not as the process claims it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Credentials {
    /// Process id, in our pid namespace; 0 when the process is in a pid namespace we cannot
    /// see (the kernel's answer then), which matches no pid a `PeerCheck` names.
    pub pid: u32,
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// One received message: its length, the kernel's flags, the fds that came with it (owned,
/// close-on-exec), and its sender's credentials if the kernel attached them.
pub(crate) struct Received {
    pub bytes: usize,
    pub truncated: bool,
    pub fds_truncated: bool,
    pub fds: Vec<OwnedFd>,
    pub sender: Option<Credentials>,
}

/// `recvmsg` into `frame`, with room for `max_fds` fds and one set of credentials; retried
/// when a signal interrupts it.
pub(crate) fn recv(socket: BorrowedFd<'_>, frame: &mut [u8], max_fds: usize) -> Result<Received, Errno> {
    let rights = u32::try_from(max_fds * size_of::<libc::c_int>()).map_err(|_| Errno::INVAL)?;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(rights) + libc::CMSG_SPACE(size_of::<libc::ucred>() as u32) } as usize;
    // u64 words: control messages need the alignment of `cmsghdr` (that of a `size_t`).
    let mut control = vec![0u64; space.div_ceil(size_of::<u64>())];
    let mut iov = libc::iovec { iov_base: frame.as_mut_ptr().cast(), iov_len: frame.len() };
    // SAFETY: an all-zero msghdr is valid (no name, no buffers); the fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len() * size_of::<u64>();
    let received = loop {
        // SAFETY: `msg` points at `iov` (over `frame`) and `control`, which outlive the call.
        let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC | libc::MSG_TRUNC) };
        match usize::try_from(n) {
            Ok(n) => break n,
            Err(_) => match Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO) {
                Errno::INTR => continue,
                errno => return Err(errno),
            },
        }
    };
    let mut fds = Vec::new();
    let mut sender = None;
    // SAFETY: the kernel filled `control` up to `msg.msg_controllen`; CMSG_FIRSTHDR and
    // CMSG_NXTHDR stay inside it, and each message's data is read within its `cmsg_len`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let header = cmsg.read_unaligned();
            let data = libc::CMSG_DATA(cmsg);
            let len = (header.cmsg_len as usize).saturating_sub(data.offset_from(cmsg.cast::<u8>()) as usize);
            match (header.cmsg_level, header.cmsg_type) {
                (libc::SOL_SOCKET, libc::SCM_RIGHTS) => {
                    for i in 0..len / size_of::<libc::c_int>() {
                        let fd = data.cast::<libc::c_int>().add(i).read_unaligned();
                        // Owned at once, so that every early return closes it.
                        fds.push(OwnedFd::from_raw_fd(fd));
                    }
                }
                (libc::SOL_SOCKET, libc::SCM_CREDENTIALS) if len >= size_of::<libc::ucred>() => {
                    sender = Some(credentials(data.cast::<libc::ucred>().read_unaligned()));
                }
                _ => {}
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(Received {
        bytes: received,
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
        fds_truncated: msg.msg_flags & libc::MSG_CTRUNC != 0,
        fds,
        sender,
    })
}

/// `SO_PEERCRED`: the peer as it was when the connection was made.
pub(crate) fn peer_credentials(socket: BorrowedFd<'_>) -> Result<Credentials, Errno> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of a `ucred` and its size.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO));
    }
    Ok(credentials(cred))
}

/// The kernel's record, the pid as it is: 0 when the peer is outside our pid namespace.
fn credentials(cred: libc::ucred) -> Credentials {
    Credentials { pid: u32::try_from(cred.pid).unwrap_or(0), uid: cred.uid, gid: cred.gid }
}
