//! [`OwnedDir`]: a directory peerpool reads reports from or writes results to, opened so that
//! another local user can neither redirect its writes nor plant what it reads.
//!
//! - The directory is opened without following a link at its last component
//!   (`O_DIRECTORY | O_NOFOLLOW`) and used through that descriptor from then on (`openat`,
//!   `renameat`): renaming or replacing the path afterwards changes nothing.
//! - It must be owned by our effective uid and not writable by other users (group write is
//!   the owner's choice). A missing one is created mode 0700, parents too.
//! - Every write is atomic: a new temporary file (`O_CREAT | O_EXCL | O_NOFOLLOW`) in the same
//!   directory, renamed over the name, so a planted link is replaced, never followed, and a
//!   failed write leaves the old file whole. There is no `fsync`: atomic for readers and
//!   failures, not for a power loss.
//! - Only regular files are read, opened without following links and without blocking
//!   (`O_NOFOLLOW | O_NONBLOCK`, so a FIFO cannot hang the reader), and at most a size cap.

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a directory or a file in it was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DirError {
    /// Nothing at the path.
    #[error("{}: does not exist", path.display())]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// A symbolic link where peerpool does not follow links.
    #[error("{}: is a symbolic link; peerpool does not follow links here", path.display())]
    Link {
        /// The path.
        path: PathBuf,
    },
    /// Something other than a directory where one is needed.
    #[error("{}: is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The directory belongs to another user, who could change it under us.
    #[error("{}: owned by uid {owner}, not by uid {euid} that runs peerpool", path.display())]
    NotOwned {
        /// The path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our effective uid.
        euid: u32,
    },
    /// Other users may write into the directory, so they could plant files in it.
    #[error("{}: writable by every user (mode {mode:o}); `chmod o-w` it first", path.display())]
    OpenToOthers {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Not a regular file where one is read.
    #[error("{}: is {kind}, not a regular file", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is, e.g. "a FIFO".
        kind: &'static str,
    },
    /// Larger than the reader accepts.
    #[error("{}: larger than {limit} bytes", path.display())]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// The cap.
        limit: u64,
    },
    /// A name that is not one plain file name (empty, `.`, `..`, or with a `/`).
    #[error("{name:?}: not a plain file name")]
    BadName {
        /// The name.
        name: String,
    },
    /// A system call failed.
    #[error("{}: {op} failed: {errno}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The operation, e.g. "rename".
        op: &'static str,
        /// What it returned.
        errno: Errno,
    },
}

/// An open directory that passed the checks above.
#[derive(Debug)]
pub struct OwnedDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl OwnedDir {
    /// Opens `path`, which must exist.
    pub fn open(path: &Path) -> Result<OwnedDir, DirError> {
        let fd = open_dir(path)?;
        let dir = OwnedDir { fd, path: path.to_path_buf() };
        dir.check_owner()?;
        Ok(dir)
    }

    /// Opens `path`, first creating it (and missing parents) with mode 0700.
    pub fn create(path: &Path) -> Result<OwnedDir, DirError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| io_error(parent, "mkdir", &e))?;
        }
        let created = match rustix::fs::mkdir(path, Mode::RWXU) {
            Ok(()) => true,
            Err(Errno::EXIST) => false,
            Err(errno) => return Err(DirError::Io { path: path.into(), op: "mkdir", errno }),
        };
        let dir = OwnedDir { fd: open_dir(path)?, path: path.to_path_buf() };
        if created {
            // mkdir's mode passes through the umask, which may have removed our own bits.
            rustix::fs::fchmod(&dir.fd, Mode::RWXU).map_err(|errno| dir.io("chmod", errno))?;
        }
        dir.check_owner()?;
        Ok(dir)
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes` to `name` in the directory atomically; returns the file's path.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, DirError> {
        self.stage(name, bytes)?.commit()
    }

    /// Writes `bytes` to a temporary file that [`Staged::commit`] puts in place as `name`;
    /// staging several files before committing any keeps a failed write from leaving a new
    /// file beside a stale one.
    pub fn stage(&self, name: &str, bytes: &[u8]) -> Result<Staged, DirError> {
        check_name(name)?;
        let dir = self.fd.try_clone().map_err(|e| io_error(&self.path, "dup", &e))?;
        Staged::write(dir, &self.path, name, bytes)
    }

    /// The contents of the regular file `name`, at most `limit` bytes.
    pub fn read(&self, name: &str, limit: u64) -> Result<Vec<u8>, DirError> {
        check_name(name)?;
        let path = self.path.join(name);
        let lstat =
            rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| errno_error(&path, "stat", e))?;
        regular(&path, &lstat, limit)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty()).map_err(|e| errno_error(&path, "open", e))?;
        // Checked again on what was opened: the name may have changed in between.
        regular(&path, &rustix::fs::fstat(&fd).map_err(|e| errno_error(&path, "stat", e))?, limit)?;
        let mut bytes = Vec::new();
        std::fs::File::from(fd).take(limit + 1).read_to_end(&mut bytes).map_err(|e| io_error(&path, "read", &e))?;
        if bytes.len() as u64 > limit {
            return Err(DirError::TooLarge { path, limit });
        }
        Ok(bytes)
    }

    /// The names in the directory, sorted (`.`, `..` and names that are not UTF-8 left out).
    pub fn names(&self) -> Result<Vec<String>, DirError> {
        let dir = rustix::fs::Dir::read_from(&self.fd).map_err(|errno| self.io("read directory", errno))?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|errno| self.io("read directory", errno))?;
            if let Ok(name) = entry.file_name().to_str()
                && name != "."
                && name != ".."
            {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    fn check_owner(&self) -> Result<(), DirError> {
        let stat = rustix::fs::fstat(&self.fd).map_err(|errno| self.io("stat", errno))?;
        let euid = rustix::process::geteuid().as_raw();
        if stat.st_uid != euid {
            return Err(DirError::NotOwned { path: self.path.clone(), owner: stat.st_uid, euid });
        }
        let mode = stat.st_mode & 0o7777;
        if mode & 0o002 != 0 {
            return Err(DirError::OpenToOthers { path: self.path.clone(), mode });
        }
        Ok(())
    }

    fn io(&self, op: &'static str, errno: Errno) -> DirError {
        DirError::Io { path: self.path.clone(), op, errno }
    }
}

impl AsFd for OwnedDir {
    fn as_fd(&self) -> rustix::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Writes `bytes` to the file at `path` atomically (a temporary file beside it, renamed over
/// it): a link at `path` is replaced, not followed. The directory is the one the caller named,
/// so it is opened as given (links followed) and not held to [`OwnedDir`]'s ownership rules.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<PathBuf, DirError> {
    stage_file(path, bytes)?.commit()
}

/// [`write_file`] up to the rename, which [`Staged::commit`] does.
pub fn stage_file(path: &Path, bytes: &[u8]) -> Result<Staged, DirError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| DirError::BadName { name: path.display().to_string() })?;
    check_name(name)?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = rustix::fs::open(parent, flags, Mode::empty()).map_err(|e| errno_error(parent, "open", e))?;
    Staged::write(dir, parent, name, bytes)
}

/// A file written under a temporary name in its directory, not yet in place. Dropping it
/// without [`Staged::commit`] removes it.
#[derive(Debug)]
pub struct Staged {
    dir: OwnedFd,
    temp: String,
    name: String,
    path: PathBuf,
    committed: bool,
}

impl Staged {
    /// A new temporary file in `dir` (`O_EXCL | O_NOFOLLOW`, so never someone else's) holding `bytes`.
    fn write(dir: OwnedFd, dir_path: &Path, name: &str, bytes: &[u8]) -> Result<Staged, DirError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = dir_path.join(name);
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mode = Mode::from_raw_mode(0o644);
        let (temp, fd) = loop {
            let temp = format!(".{name}.{}.{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
            match rustix::fs::openat(&dir, &temp, flags, mode) {
                Ok(fd) => break (temp, fd),
                // Left by an earlier process of the same pid that died mid-write: another name.
                Err(Errno::EXIST) => continue,
                Err(errno) => return Err(errno_error(&path, "create a temporary file for", errno)),
            }
        };
        let staged = Staged { dir, temp, name: name.to_string(), path, committed: false };
        std::fs::File::from(fd).write_all(bytes).map_err(|e| io_error(&staged.path, "write", &e))?;
        Ok(staged)
    }

    /// Renames the file over its name; returns its path.
    pub fn commit(mut self) -> Result<PathBuf, DirError> {
        rustix::fs::renameat(&self.dir, &self.temp, &self.dir, &self.name)
            .map_err(|errno| errno_error(&self.path, "rename", errno))?;
        self.committed = true;
        Ok(self.path.clone())
    }

    /// Where it goes.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = rustix::fs::unlinkat(&self.dir, &self.temp, AtFlags::empty());
        }
    }
}

fn open_dir(path: &Path) -> Result<OwnedFd, DirError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::open(path, flags, Mode::empty()).map_err(|errno| {
        // Which refusal: a link (ELOOP, or ENOTDIR on some kernels), something else, or nothing.
        match rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                DirError::Link { path: path.into() }
            }
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) != FileType::Directory => {
                DirError::NotADirectory { path: path.into() }
            }
            _ => errno_error(path, "open", errno),
        }
    })
}

fn check_name(name: &str) -> Result<(), DirError> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(DirError::BadName { name: name.into() });
    }
    Ok(())
}

fn regular(path: &Path, stat: &rustix::fs::Stat, limit: u64) -> Result<(), DirError> {
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => None,
        FileType::Symlink => return Err(DirError::Link { path: path.into() }),
        FileType::Directory => Some("a directory"),
        FileType::Fifo => Some("a FIFO"),
        FileType::Socket => Some("a socket"),
        FileType::CharacterDevice => Some("a character device"),
        FileType::BlockDevice => Some("a block device"),
        _ => Some("an unknown kind of file"),
    };
    if let Some(kind) = kind {
        return Err(DirError::NotRegular { path: path.into(), kind });
    }
    if u64::try_from(stat.st_size).unwrap_or(u64::MAX) > limit {
        return Err(DirError::TooLarge { path: path.into(), limit });
    }
    Ok(())
}

fn errno_error(path: &Path, op: &'static str, errno: Errno) -> DirError {
    match errno {
        Errno::NOENT => DirError::Missing { path: path.into() },
        Errno::LOOP => DirError::Link { path: path.into() },
        _ => DirError::Io { path: path.into(), op, errno },
    }
}

fn io_error(path: &Path, op: &'static str, error: &std::io::Error) -> DirError {
    errno_error(path, op, Errno::from_io_error(error).unwrap_or(Errno::IO))
}
