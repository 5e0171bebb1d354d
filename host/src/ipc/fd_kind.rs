//! [`FdKind`]: the kinds of object a file descriptor can refer to, and which of them a driver
//! export handle may be (`fd_checks.rs` finds an fd's kind).

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
