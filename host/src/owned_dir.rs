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
//! - One rule for every file written, here or at a path named on a command line
//!   ([`check_target`]): it is created or replaced only where nothing is, or a regular file we
//!   may replace is (a link to a regular file, or to nothing, is replaced as a link). A FIFO, a
//!   device, a socket, a directory, a link to one of those or a link loop is refused, as is a
//!   name ending in `/`: a rename would put a regular file in its place (root could replace
//!   `/dev/null`), and whoever named it meant something else.
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
    #[error("{}: does not exist", crate::text::path(path))]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// A symbolic link where peerpool does not follow links.
    #[error("{}: is a symbolic link; peerpool does not follow links here", crate::text::path(path))]
    Link {
        /// The path.
        path: PathBuf,
    },
    /// Something other than a directory where one is needed.
    #[error("{}: is not a directory", crate::text::path(path))]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The directory belongs to another user, who could change it under us.
    #[error("{}: owned by uid {owner}, not by uid {euid} that runs peerpool", crate::text::path(path))]
    NotOwned {
        /// The path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our effective uid.
        euid: u32,
    },
    /// Other users may write into the directory, so they could plant files in it.
    #[error("{}: writable by every user (mode {mode:o}); `chmod o-w` it first", crate::text::path(path))]
    OpenToOthers {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Not a regular file where one is read.
    #[error("{}: is {kind}, not a regular file", crate::text::path(path))]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is, e.g. "a FIFO".
        kind: &'static str,
    },
    /// Larger than the reader accepts.
    #[error("{}: larger than {limit} bytes", crate::text::path(path))]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// The cap.
        limit: u64,
    },
    /// A path to write a file at that names a directory: it ends in `/` (or `/.`).
    #[error("{}: names a directory (it ends in /); name a file", crate::text::path(path))]
    DirectoryName {
        /// The path.
        path: PathBuf,
    },
    /// A regular file whose directory does not let us replace it (not writable by us, or
    /// sticky and the file another user's).
    #[error("{}: cannot be replaced: its directory does not let this user replace it", crate::text::path(path))]
    NotReplaceable {
        /// The path.
        path: PathBuf,
    },
    /// A name that is not one plain file name (empty, `.`, `..`, or with a `/`).
    #[error("\"{}\": not a plain file name", crate::text::echo(name))]
    BadName {
        /// The name.
        name: String,
    },
    /// A system call failed.
    #[error("{}: {op} failed: {errno}", crate::text::path(path))]
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
        self.check_target(name)?;
        let dir = self.fd.try_clone().map_err(|e| io_error(&self.path, "dup", &e))?;
        Staged::write(dir, &self.path, name, bytes)
    }

    /// Whether a file may be written at `name` here: nothing there, or a regular file we may
    /// replace (the module's rule). Writes check it themselves; a caller checks it first to
    /// refuse before any work.
    pub fn check_target(&self, name: &str) -> Result<(), DirError> {
        check_name(name)?;
        replaceable(&self.fd, name, &self.path.join(name))
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
    let (dir, parent, name) = open_target(path)?;
    Staged::write(dir, parent, name, bytes)
}

/// Whether [`write_file`] may write at `path` (the module's rule): its directory exists, and
/// nothing is at `path` or a regular file we may replace is. For refusing before any work.
pub fn check_target(path: &Path) -> Result<(), DirError> {
    open_target(path).map(drop)
}

/// `path`'s directory, opened, and its file name, once `path` passed [`check_target`]'s rule.
fn open_target(path: &Path) -> Result<(OwnedFd, &Path, &str), DirError> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    // `Path::file_name` reads `new/` and `new/.` as `new`: a file would be made where a
    // directory was meant.
    if bytes.ends_with(b"/") || bytes.ends_with(b"/.") || bytes == b"." {
        return Err(DirError::DirectoryName { path: path.into() });
    }
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
    let dir = rustix::fs::open(parent, flags, Mode::empty()).map_err(|e| match e {
        Errno::NOTDIR => DirError::NotADirectory { path: parent.into() },
        _ => errno_error(parent, "open", e),
    })?;
    replaceable(&dir, name, path)?;
    Ok((dir, parent, name))
}

/// Whether a new file may be renamed over `name` in `dir` (`path` names it in errors): nothing
/// there; a regular file, or a link to one or to nothing (the link is replaced, not followed);
/// and a directory that lets us replace it.
fn replaceable(dir: &OwnedFd, name: &str, path: &Path) -> Result<(), DirError> {
    let entry = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(entry) => entry,
        Err(Errno::NOENT) => return Ok(()),
        Err(errno) => return Err(errno_error(path, "stat", errno)),
    };
    let refused = |kind| Err(DirError::NotRegular { path: path.into(), kind });
    match FileType::from_raw_mode(entry.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => match rustix::fs::statat(dir, name, AtFlags::empty()) {
            Err(Errno::NOENT) => {}
            Err(Errno::LOOP) => return refused("a symbolic link loop"),
            Err(errno) => return Err(errno_error(path, "stat", errno)),
            Ok(target) => match kind_of(FileType::from_raw_mode(target.st_mode)) {
                None => {}
                Some(kind) => return refused(link_to(kind)),
            },
        },
        other => return refused(kind_of(other).unwrap_or("an unknown kind of file")),
    }
    // A rename over the name needs write and search permission on the directory, and in a
    // sticky one (such as /tmp) the file or the directory to be ours.
    let access = rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK;
    let not_replaceable = || DirError::NotReplaceable { path: path.into() };
    rustix::fs::accessat(dir, ".", access, AtFlags::EACCESS).map_err(|_| not_replaceable())?;
    let here = rustix::fs::fstat(dir).map_err(|errno| errno_error(path, "stat", errno))?;
    let euid = rustix::process::geteuid().as_raw();
    let sticky = here.st_mode & 0o1000 != 0;
    if sticky && euid != 0 && entry.st_uid != euid && here.st_uid != euid {
        return Err(not_replaceable());
    }
    Ok(())
}

/// What a file of kind `kind` is, in words, or `None` for a regular file.
fn kind_of(kind: FileType) -> Option<&'static str> {
    match kind {
        FileType::RegularFile => None,
        FileType::Symlink => Some("a symbolic link"),
        FileType::Directory => Some("a directory"),
        FileType::Fifo => Some("a FIFO"),
        FileType::Socket => Some("a socket"),
        FileType::CharacterDevice => Some("a character device"),
        FileType::BlockDevice => Some("a block device"),
        _ => Some("an unknown kind of file"),
    }
}

/// "a symbolic link to " `kind`.
fn link_to(kind: &'static str) -> &'static str {
    match kind {
        "a directory" => "a symbolic link to a directory",
        "a FIFO" => "a symbolic link to a FIFO",
        "a socket" => "a symbolic link to a socket",
        "a character device" => "a symbolic link to a character device",
        "a block device" => "a symbolic link to a block device",
        _ => "a symbolic link to an unknown kind of file",
    }
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

    /// Renames the file over its name, checked again (the module's rule) just before; returns
    /// its path.
    pub fn commit(mut self) -> Result<PathBuf, DirError> {
        replaceable(&self.dir, &self.name, &self.path)?;
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
        FileType::Symlink => return Err(DirError::Link { path: path.into() }),
        other => kind_of(other),
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
