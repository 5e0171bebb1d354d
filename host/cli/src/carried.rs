//! Where the libcuda shim that `peerpool sim` has a program load is put: the shim this binary
//! carries when built from a package (`build.rs`), or a file named on the command line or found
//! beside the binary. The loader opens it by path after the check, so it must lie where no other
//! user can change the path in between ([`crate::trusted`]). The places tried, in order: a
//! named file where it lies (when its directory is ours, for the links beside it), then a copy in
//! `$XDG_CACHE_HOME/peerpool`, in `$HOME/.cache/peerpool` (once per content, kept), and in a new
//! private directory made for the run in `$XDG_RUNTIME_DIR`, else in the temporary directory.

use crate::trusted::{self, Fs, Host, Kind};
use peerpool::owned_dir::OwnedDir;
use std::borrow::Cow;
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The shim's bytes and a name for their content that stays the same from one build of this
/// command to the next (std's hasher promises no such thing), given by the build script.
#[cfg(embedded_shim)]
const SHIM: Option<(&[u8], &str)> =
    Some((include_bytes!(env!("PEERPOOL_EMBEDDED_SHIM")), env!("PEERPOOL_EMBEDDED_SHIM_ID")));
#[cfg(not(embedded_shim))]
const SHIM: Option<(&[u8], &str)> = None;

/// The shim this binary carries, its bytes and their content's name; `None` when it carries none.
pub fn carried() -> Option<(&'static [u8], &'static str)> {
    SHIM
}

/// A shim to place.
pub enum Source<'a> {
    /// Bytes, with a name for their content (one cache directory per name).
    Bytes(&'a [u8], &'a str),
    /// A file: used where it lies when that passes, else copied.
    File(&'a Path),
}

/// The settings the places come from: the environment's, or a test's.
pub struct Places {
    pub cache_home: Option<OsString>,
    pub home: Option<OsString>,
    pub runtime_dir: Option<OsString>,
    pub temp: PathBuf,
}

impl Places {
    pub fn from_env() -> Places {
        Places {
            cache_home: std::env::var_os("XDG_CACHE_HOME"),
            home: std::env::var_os("HOME"),
            runtime_dir: std::env::var_os("XDG_RUNTIME_DIR"),
            temp: std::env::temp_dir(),
        }
    }
}

/// The placed shim's path (every link resolved) and the directory made for this run, if one was.
#[derive(Debug)]
pub struct Placed {
    pub shim: PathBuf,
    pub run_dir: Option<RunDir>,
}

/// A directory made for one run: removed with everything in it when dropped, unless kept.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Leaves the directory in place (for a program started later); its path.
    pub fn keep(mut self) -> PathBuf {
        std::mem::take(&mut self.path)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            // std removes a tree without following links in it.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// `file` beside this command, where cargo builds the libraries it installs (the shim,
/// peerpool's runtime), wherever the build directory is. Not to run a child: that is
/// `peerpool::child`'s.
pub fn beside_this_binary(file: &str) -> Option<PathBuf> {
    Some(std::env::current_exe().ok()?.parent()?.join(file))
}

/// Puts `source` as `file` in the first place that passes; the error is one line naming each
/// place tried and why it was not used.
pub fn place(source: Source, file: &str, places: &Places) -> Result<Placed, String> {
    let euid = trusted::euid();
    let mut tried = Vec::new();
    let (bytes, id): (Cow<[u8]>, Cow<str>) = match source {
        Source::Bytes(bytes, id) => (bytes.into(), id.into()),
        Source::File(path) => {
            match in_place(path, euid) {
                Ok(shim) => return Ok(Placed { shim, run_dir: None }),
                Err(why) => tried.push(format!("where it lies: {why}")),
            }
            let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
            (bytes.into(), file_id(path)?.into())
        }
    };
    let absolute = |var: &str, value: &Option<OsString>| match value {
        None => Err(format!("{var} is not set")),
        Some(v) if !Path::new(v).is_absolute() => Err(format!("{var} is not an absolute path")),
        Some(v) => Ok(PathBuf::from(v)),
    };
    let caches = [
        ("$XDG_CACHE_HOME/peerpool", absolute("XDG_CACHE_HOME", &places.cache_home).map(|d| d.join("peerpool"))),
        ("$HOME/.cache/peerpool", absolute("HOME", &places.home).map(|h| h.join(".cache/peerpool"))),
    ];
    for (label, dir) in caches {
        match dir.and_then(|dir| in_cache(&dir, file, &bytes, &id, euid)) {
            Ok(shim) => return Ok(Placed { shim, run_dir: None }),
            Err(why) => tried.push(format!("{label}: {why}")),
        }
    }
    let private = [
        ("a new directory in $XDG_RUNTIME_DIR", absolute("XDG_RUNTIME_DIR", &places.runtime_dir)),
        ("a new directory in the temporary directory", Ok(places.temp.clone())),
    ];
    for (label, base) in private {
        match base.and_then(|base| in_private_dir(&base, file, &bytes, euid)) {
            Ok(placed) => return Ok(placed),
            Err(why) => tried.push(format!("{label}: {why}")),
        }
    }
    Err(format!(
        "no place for it that only you or root can change ({}); set XDG_CACHE_HOME to a directory of your own that others cannot write",
        tried.join("; ")
    ))
}

/// `path` itself, when it passes and its directory is ours (`sim::install` links it from
/// there).
fn in_place(path: &Path, euid: u32) -> Result<PathBuf, String> {
    let absolute = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let shim = trusted::check(&Host, &absolute, euid).map_err(|e| e.to_string())?;
    checked_file(&shim)?;
    let dir = shim.parent().unwrap_or(Path::new("/"));
    let owner = Host.lstat(dir).map_err(|e| format!("{}: {e}", dir.display()))?.uid;
    if owner != euid {
        return Err(format!("{}: owned by uid {owner}, not uid {euid}, so no links can be made in it", dir.display()));
    }
    Ok(shim)
}

/// A name for a file's content as its metadata tells (a copy is compared in full anyway).
fn file_id(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let key = format!("{}:{}:{}:{}.{}", meta.dev(), meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec());
    Ok(format!("{:016x}", fnv1a(key.as_bytes())))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// `bytes` as `file` in the cache directory `dir` (made when missing), kept for later runs.
fn in_cache(dir: &Path, file: &str, bytes: &[u8], id: &str, euid: u32) -> Result<PathBuf, String> {
    let dir = trusted::create_dir_all(&Host, dir, euid).map_err(|e| e.to_string())?;
    let written = write_once(&dir, file, bytes, id)?;
    let shim = trusted::check(&Host, &written, euid).map_err(|e| e.to_string())?;
    checked_file(&shim)?;
    Ok(shim)
}

/// `bytes` as `file` in a new directory in `base`, private to this run.
fn in_private_dir(base: &Path, file: &str, bytes: &[u8], euid: u32) -> Result<Placed, String> {
    let base = trusted::check(&Host, base, euid).map_err(|e| e.to_string())?;
    let run_dir = RunDir { path: make_private_dir(&base).map_err(|e| format!("{}: {e}", base.display()))? };
    let dir = trusted::check(&Host, &run_dir.path, euid).map_err(|e| e.to_string())?;
    let written = OwnedDir::open(&dir).and_then(|d| d.write(file, bytes)).map_err(|e| e.to_string())?;
    let shim = trusted::check(&Host, &written, euid).map_err(|e| e.to_string())?;
    checked_file(&shim)?;
    Ok(Placed { shim, run_dir: Some(run_dir) })
}

/// A directory of a fresh name in `base`, mode 0700, made by this call (`mkdtemp`'s contract):
/// in a shared directory another user may have taken a name first, so `mkdir` must create it.
fn make_private_dir(base: &Path) -> std::io::Result<PathBuf> {
    use std::hash::BuildHasher;
    for attempt in 0u32..100 {
        let seed = (std::process::id(), std::time::SystemTime::now(), attempt);
        let path = base.join(format!("peerpool-sim-{:016x}", std::hash::RandomState::new().hash_one(seed)));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                // The umask may have taken our own bits.
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no fresh directory name after 100 tries"))
}

/// A checked path names a regular file, not a directory.
fn checked_file(path: &Path) -> Result<(), String> {
    match Host.lstat(path) {
        Ok(entry) if entry.kind == Kind::File => Ok(()),
        Ok(_) => Err(format!("{}: not a regular file", path.display())),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// `bytes` as `file` in a directory of `dir` named for its version and content (`id`: one
/// directory per build, so a running program keeps its own), written unless a file there
/// holds them already (compared in full).
fn write_once(dir: &Path, file: &str, bytes: &[u8], id: &str) -> Result<PathBuf, String> {
    let name = format!("shim-{}-{id}", env!("CARGO_PKG_VERSION"));
    let dir = OwnedDir::create(&dir.join(name)).map_err(|e| e.to_string())?;
    match dir.read(file, bytes.len() as u64) {
        Ok(held) if held == bytes => Ok(dir.path().join(file)),
        _ => dir.write(file, bytes).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_is_written_once_and_rewritten_when_damaged() {
        let base = tempfile::tempdir().unwrap();
        let first = write_once(base.path(), "lib.so", b"a library", "1").unwrap();
        assert_eq!(std::fs::read(&first).unwrap(), b"a library");
        let again = write_once(base.path(), "lib.so", b"a library", "1").unwrap();
        assert_eq!(first, again);
        std::fs::write(&first, b"damaged").unwrap();
        assert_eq!(std::fs::read(write_once(base.path(), "lib.so", b"a library", "1").unwrap()).unwrap(), b"a library");
        // Another content, another directory: a program still running keeps its library.
        let other = write_once(base.path(), "lib.so", b"another library", "2").unwrap();
        assert_ne!(other.parent(), first.parent());
        assert_eq!(std::fs::read(&first).unwrap(), b"a library");
    }

    fn places(base: &Path) -> Places {
        Places { cache_home: None, home: None, runtime_dir: None, temp: base.join("tmp") }
    }

    fn open_to_all(path: &Path) {
        std::fs::create_dir_all(path).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    }

    const CARRIED: Source = Source::Bytes(b"a library", "1");

    #[test]
    fn a_cache_below_a_directory_open_to_all_is_passed_over() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path();
        open_to_all(&base.join("shared"));
        let mut places = places(base);
        places.cache_home = Some(base.join("shared/cache").into());
        places.home = Some(base.join("home").into());
        let placed = place(CARRIED, "lib.so", &places).unwrap();
        assert!(placed.shim.starts_with(base.join("home/.cache/peerpool")), "{placed:?}");
        assert!(!base.join("shared/cache").exists(), "nothing is made below the shared directory");
        assert_eq!(std::fs::read(&placed.shim).unwrap(), b"a library");
        assert!(placed.run_dir.is_none());
    }

    #[test]
    fn without_home_a_private_directory_is_made_and_removed() {
        let base = tempfile::tempdir().unwrap();
        std::fs::create_dir(base.path().join("tmp")).unwrap();
        let placed = place(CARRIED, "lib.so", &places(base.path())).unwrap();
        let dir = placed.shim.parent().unwrap().to_path_buf();
        assert_eq!(dir.parent(), Some(base.path().join("tmp").as_path()));
        let meta = std::fs::metadata(&dir).unwrap();
        assert_eq!((meta.uid(), meta.mode() & 0o777), (trusted::euid(), 0o700));
        drop(placed);
        assert!(!dir.exists());
    }

    #[test]
    fn when_nothing_passes_each_place_is_named_on_one_line() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path();
        open_to_all(&base.join("shared"));
        let mut places = places(base);
        places.cache_home = Some("relative".into());
        places.home = Some(base.join("shared").into());
        places.runtime_dir = Some(base.join("shared/run").into());
        places.temp = base.join("shared");
        let error = place(CARRIED, "lib.so", &places).unwrap_err();
        assert_eq!(error.lines().count(), 1, "{error}");
        for says in [
            "$XDG_CACHE_HOME/peerpool: XDG_CACHE_HOME is not an absolute path",
            "$HOME/.cache/peerpool: ",
            "$XDG_RUNTIME_DIR: ",
            "writable by other users (mode 0777)",
            "set XDG_CACHE_HOME to a directory of your own",
        ] {
            assert!(error.contains(says), "{says}: {error}");
        }
    }

    #[test]
    fn a_named_file_is_used_where_it_lies_only_when_that_passes() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path();
        let mine = base.join("mine/lib.so");
        std::fs::create_dir(base.join("mine")).unwrap();
        std::fs::write(&mine, b"mine").unwrap();
        let placed = place(Source::File(&mine), "lib.so", &places(base)).unwrap();
        assert_eq!(placed.shim, mine);
        open_to_all(&base.join("shared"));
        let shared = base.join("shared/lib.so");
        std::fs::write(&shared, b"shared").unwrap();
        let mut with_home = places(base);
        with_home.home = Some(base.join("home").into());
        let placed = place(Source::File(&shared), "lib.so", &with_home).unwrap();
        assert!(placed.shim.starts_with(base.join("home/.cache/peerpool")), "{placed:?}");
        assert_eq!(std::fs::read(&placed.shim).unwrap(), b"shared");
    }
}
