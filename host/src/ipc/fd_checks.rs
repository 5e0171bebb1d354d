//! What a file descriptor refers to, from `fstat`, so that a receiver can refuse a file or a
//! directory where the sender promised a driver handle.

use super::error::IpcError;
use super::fd_kind::FdKind;
use rustix::fd::{AsFd, AsRawFd};
use rustix::fs::FileType;

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
