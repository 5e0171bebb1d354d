//! [`PrivateDir`]: a fresh directory only our uid can enter, for socket files.
//!
//! Connecting to a Unix socket file needs search permission on its directory, so a 0700
//! directory keeps every other uid from connecting, whatever the socket file's own mode.

use super::error::IpcError;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A directory created with a random name and mode 0700, removed (when empty) on drop.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// A new directory `base/peerpool-ipc-<random>`. `mkdir` fails on an existing name, so the
    /// directory is always ours and new; a name taken by chance is retried with another.
    pub fn create_in(base: &Path) -> Result<PrivateDir, IpcError> {
        for _ in 0..8 {
            let path = base.join(format!("peerpool-ipc-{:016x}", random_u64()?));
            match rustix::fs::mkdir(&path, Mode::RWXU) {
                Ok(()) => {
                    let dir = PrivateDir { path };
                    dir.restrict()?;
                    return Ok(dir);
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(IpcError::io("mkdir", e)),
            }
        }
        Err(IpcError::Io { op: "mkdir", errno: Errno::EXIST })
    }

    /// `$XDG_RUNTIME_DIR` (per-user, 0700 already) where set, else the system's temp dir.
    pub fn default_base() -> PathBuf {
        match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
            Some(dir) if dir.is_absolute() && dir.is_dir() => dir,
            _ => std::env::temp_dir(),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Mode exactly 0700: `mkdir`'s mode passes through the umask, which could remove our bits.
    fn restrict(&self) -> Result<(), IpcError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let dir = rustix::fs::open(&self.path, flags, Mode::empty()).map_err(|e| IpcError::io("open", e))?;
        rustix::fs::fchmod(&dir, Mode::RWXU).map_err(|e| IpcError::io("fchmod", e))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        // Only an empty directory goes: whatever someone else put there is not ours to delete.
        let _ = rustix::fs::rmdir(&self.path);
    }
}

/// 64 random bits from the kernel, so that the name cannot be guessed and taken in advance.
fn random_u64() -> Result<u64, IpcError> {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut urandom| urandom.read_exact(&mut bytes))
        .map_err(|e| IpcError::Io { op: "read /dev/urandom", errno: Errno::from_io_error(&e).unwrap_or(Errno::IO) })?;
    Ok(u64::from_ne_bytes(bytes))
}
