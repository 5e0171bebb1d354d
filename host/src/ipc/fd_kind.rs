//! What a file descriptor refers to, from `fstat`, so that a receiver can refuse a file or a
//! directory where the sender promised a driver handle.

use super::error::IpcError;
use rustix::fd::{AsFd, AsRawFd};
use rustix::fs::FileType;
use std::fmt;

/// The kind of object behind a file descriptor (the `S_IFMT` bits of `st_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FdKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A character device: what CUDA's POSIX-fd export handles are (an open of the NVIDIA device
    /// node, per the hardware record).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A pipe or FIFO.
    Fifo,
    /// A socket.
    Socket,
    /// A symbolic link (only through `O_PATH`).
    Symlink,
    /// An eventfd (an anonymous inode the kernel names `anon_inode:[eventfd]`): what the
    /// simulator's export handles are.
    EventFd,
    /// Any other anonymous inode (epoll, timerfd, signalfd, pidfd, a driver object...), or
    /// one whose name `/proc/self/fd` does not give.
    Anonymous,
}

impl FdKind {
    /// What a driver export handle may be: a character device (the real driver's handles are
    /// opens of its device node) or an eventfd (the simulator's); never a file, a directory, a
    /// link, a pipe, a socket, or another anonymous inode.
    pub const DEVICE_HANDLE: &'static [FdKind] = &[FdKind::CharDevice, FdKind::EventFd];
}

impl fmt::Display for FdKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FdKind::Regular => "a regular file",
            FdKind::Directory => "a directory",
            FdKind::CharDevice => "a character device",
            FdKind::BlockDevice => "a block device",
            FdKind::Fifo => "a pipe",
            FdKind::Socket => "a socket",
            FdKind::Symlink => "a symbolic link",
            FdKind::EventFd => "an eventfd",
            FdKind::Anonymous => "an anonymous inode other than an eventfd",
        })
    }
}

/// What `fd` refers to. Anonymous inodes have no file type bits; which one it is comes from
/// the name the kernel gives it in `/proc/self/fd`.
pub fn fd_kind(fd: impl AsFd) -> Result<FdKind, IpcError> {
    let fd = fd.as_fd();
    let stat = rustix::fs::fstat(fd).map_err(|e| IpcError::io("fstat", e))?;
    Ok(match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => FdKind::Regular,
        FileType::Directory => FdKind::Directory,
        FileType::CharacterDevice => FdKind::CharDevice,
        FileType::BlockDevice => FdKind::BlockDevice,
        FileType::Fifo => FdKind::Fifo,
        FileType::Socket => FdKind::Socket,
        FileType::Symlink => FdKind::Symlink,
        _ => match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
            Ok(name) if name.as_os_str() == "anon_inode:[eventfd]" => FdKind::EventFd,
            _ => FdKind::Anonymous,
        },
    })
}

/// `fd`'s kind if it is one of `allowed`, else [`IpcError::WrongFdKind`].
pub fn expect_kind(fd: impl AsFd, allowed: &'static [FdKind]) -> Result<FdKind, IpcError> {
    let found = fd_kind(fd)?;
    if allowed.contains(&found) { Ok(found) } else { Err(IpcError::WrongFdKind { expected: allowed, found }) }
}

/// [`expect_kind`] with [`FdKind::DEVICE_HANDLE`]: the check before handing an fd to a driver import.
pub fn expect_device_handle(fd: impl AsFd) -> Result<FdKind, IpcError> {
    expect_kind(fd, FdKind::DEVICE_HANDLE)
}
