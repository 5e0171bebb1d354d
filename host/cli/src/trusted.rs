//! Whether a path lies where no other user can change what it names: the test for the library
//! `peerpool sim` has a program load, and for the directories it is linked from.
//!
//! Every component from `/` down is checked: a directory must be owned by root or by our
//! effective uid and not writable by group or others, unless it is root's and sticky (as
//! `/tmp` is: others may add names there but not replace ours); the last component, a
//! directory or a regular file, the same (no sticky exception for a file). A symbolic link is
//! resolved where it lies, its target walked and checked the same way, and the result names
//! no link. Once every directory on a path is one that only root or we can change, the path
//! keeps naming the same file until one of us changes it, so a check by path holds for every
//! later use by path, the loader's included.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Links followed in one path before it is refused, as the kernel's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// What one path component is, as `lstat` tells (links not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    pub uid: u32,
    /// The permission bits, sticky bit included (`st_mode & 0o7777`).
    pub mode: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Link,
    Other,
}

/// What the check reads and, to create a directory, does: the host's file system, or a model.
pub trait Fs {
    fn lstat(&self, path: &Path) -> std::io::Result<Entry>;
    fn read_link(&self, path: &Path) -> std::io::Result<PathBuf>;
    /// Makes the directory `path` (its parent exists), mode 0700.
    fn mkdir(&self, path: &Path) -> std::io::Result<()>;
}

/// The host's file system, through std.
pub struct Host;

impl Fs for Host {
    fn lstat(&self, path: &Path) -> std::io::Result<Entry> {
        let meta = std::fs::symlink_metadata(path)?;
        let kind = match meta.file_type() {
            t if t.is_symlink() => Kind::Link,
            t if t.is_dir() => Kind::Dir,
            t if t.is_file() => Kind::File,
            _ => Kind::Other,
        };
        Ok(Entry { kind, uid: meta.uid(), mode: meta.mode() & 0o7777 })
    }

    fn read_link(&self, path: &Path) -> std::io::Result<PathBuf> {
        std::fs::read_link(path)
    }

    fn mkdir(&self, path: &Path) -> std::io::Result<()> {
        std::fs::DirBuilder::new().mode(0o700).create(path)?;
        // The umask may have taken our own bits; nobody else can have replaced the name,
        // since its parent passed the check.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
    }
}

/// This process's effective uid.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Why a path was refused: the component at fault and what is wrong with it.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    pub path: PathBuf,
    pub why: Why,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Why {
    NotAbsolute,
    Missing,
    Owner { uid: u32, euid: u32 },
    Writable { mode: u32 },
    NotADirectory,
    NotAFile,
    TooManyLinks,
    Io(ErrorKind),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = peerpool::text::path(&self.path);
        match &self.why {
            Why::NotAbsolute => write!(f, "{path}: not an absolute path"),
            Why::Missing => write!(f, "{path}: does not exist"),
            Why::Owner { uid, euid } => write!(f, "{path}: owned by uid {uid}, neither root nor uid {euid}"),
            Why::Writable { mode } => write!(f, "{path}: writable by other users (mode {mode:04o})"),
            Why::NotADirectory => write!(f, "{path}: not a directory"),
            Why::NotAFile => write!(f, "{path}: not a regular file"),
            Why::TooManyLinks => write!(f, "{path}: too many symbolic links"),
            Why::Io(kind) => write!(f, "{path}: {kind}"),
        }
    }
}

/// The rule for one component (`last`: the end of the path, where a regular file may be).
pub fn allowed(entry: &Entry, last: bool, euid: u32) -> Result<(), Why> {
    match entry.kind {
        Kind::Dir => {}
        Kind::File if last => {}
        Kind::File => return Err(Why::NotADirectory),
        Kind::Link | Kind::Other => return Err(if last { Why::NotAFile } else { Why::NotADirectory }),
    }
    if entry.uid != 0 && entry.uid != euid {
        return Err(Why::Owner { uid: entry.uid, euid });
    }
    let shared_but_sticky = entry.kind == Kind::Dir && entry.uid == 0 && entry.mode & 0o1000 != 0;
    if entry.mode & 0o022 != 0 && !shared_but_sticky {
        return Err(Why::Writable { mode: entry.mode });
    }
    Ok(())
}

/// `path` (absolute) with every link resolved, once each of its components passed [`allowed`]
/// (a link's target in its place): a directory or a regular file no other user can change.
pub fn check(fs: &impl Fs, path: &Path, euid: u32) -> Result<PathBuf, Refused> {
    walk(fs, path, euid, false)
}

/// [`check`] for a directory, making each missing one (mode 0700) once its parent passed.
pub fn create_dir_all(fs: &impl Fs, path: &Path, euid: u32) -> Result<PathBuf, Refused> {
    let dir = walk(fs, path, euid, true)?;
    match fs.lstat(&dir) {
        Ok(entry) if entry.kind == Kind::Dir => Ok(dir),
        Ok(_) => Err(Refused { path: dir, why: Why::NotADirectory }),
        Err(e) => Err(Refused { path: dir, why: Why::Io(e.kind()) }),
    }
}

fn walk(fs: &impl Fs, path: &Path, euid: u32, create: bool) -> Result<PathBuf, Refused> {
    if !path.is_absolute() {
        return Err(Refused { path: path.into(), why: Why::NotAbsolute });
    }
    let refused = |path: &Path, why| Refused { path: path.into(), why };
    let root = PathBuf::from("/");
    let entry = fs.lstat(&root).map_err(|e| refused(&root, Why::Io(e.kind())))?;
    allowed(&entry, false, euid).map_err(|why| refused(&root, why))?;
    // What is left to walk, in order; a link's target goes in front of it.
    let mut pending: Vec<OsString> = names(path);
    pending.reverse();
    let mut resolved = root;
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if name == ".." {
            // Up to a directory already checked.
            resolved.pop();
            continue;
        }
        let here = resolved.join(&name);
        let entry = match fs.lstat(&here) {
            Err(e) if e.kind() == ErrorKind::NotFound && create => {
                fs.mkdir(&here).map_err(|e| refused(&here, Why::Io(e.kind())))?;
                fs.lstat(&here).map_err(|e| refused(&here, Why::Io(e.kind())))?
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(refused(&here, Why::Missing)),
            Err(e) => return Err(refused(&here, Why::Io(e.kind()))),
            Ok(entry) => entry,
        };
        if entry.kind == Kind::Link {
            links += 1;
            if links > MAX_LINKS {
                return Err(refused(&here, Why::TooManyLinks));
            }
            // A link cannot be changed, only replaced, by whoever may write its directory,
            // which passed: what it says now it says at every later use.
            let target = fs.read_link(&here).map_err(|e| refused(&here, Why::Io(e.kind())))?;
            if target.is_absolute() {
                resolved = PathBuf::from("/");
            }
            pending.extend(names(&target).into_iter().rev());
            continue;
        }
        allowed(&entry, pending.is_empty(), euid).map_err(|why| refused(&here, why))?;
        resolved = here;
    }
    Ok(resolved)
}

/// The names of `path` to walk (`/` and `.` left out, `..` kept).
fn names(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A file system in memory: each path's entry and, for a link, its target.
    #[derive(Default)]
    struct Model {
        entries: HashMap<PathBuf, (Entry, Option<PathBuf>)>,
    }

    impl Model {
        fn with_root() -> Model {
            let mut model = Model::default();
            model.dir("/", 0, 0o755);
            model
        }
        fn dir(&mut self, path: &str, uid: u32, mode: u32) {
            self.entries.insert(path.into(), (Entry { kind: Kind::Dir, uid, mode }, None));
        }
        fn file(&mut self, path: &str, uid: u32, mode: u32) {
            self.entries.insert(path.into(), (Entry { kind: Kind::File, uid, mode }, None));
        }
        fn link(&mut self, path: &str, target: &str) {
            let entry = Entry { kind: Kind::Link, uid: 0, mode: 0o777 };
            self.entries.insert(path.into(), (entry, Some(target.into())));
        }
    }

    impl Fs for Model {
        fn lstat(&self, path: &Path) -> std::io::Result<Entry> {
            self.entries.get(path).map(|(e, _)| *e).ok_or_else(|| ErrorKind::NotFound.into())
        }
        fn read_link(&self, path: &Path) -> std::io::Result<PathBuf> {
            self.entries.get(path).and_then(|(_, t)| t.clone()).ok_or_else(|| ErrorKind::InvalidInput.into())
        }
        fn mkdir(&self, _: &Path) -> std::io::Result<()> {
            Err(ErrorKind::ReadOnlyFilesystem.into())
        }
    }

    const ME: u32 = 1000;
    const OTHER: u32 = 65534;

    #[test]
    fn links_are_resolved_and_their_targets_checked() {
        let mut fs = Model::with_root();
        fs.dir("/home", 0, 0o755);
        fs.dir("/home/me", ME, 0o700);
        fs.dir("/home/other", OTHER, 0o755);
        fs.dir("/tmp", 0, 0o1777);
        fs.dir("/tmp/mine", ME, 0o700);
        fs.file("/tmp/mine/lib.so", ME, 0o644);
        fs.link("/home/me/cache", "../../tmp/mine");
        fs.link("/home/me/elsewhere", "/home/other");
        fs.link("/home/me/loop", "loop");
        let check = |p: &str| check(&fs, Path::new(p), ME);
        assert_eq!(check("/home/me/cache/lib.so"), Ok(PathBuf::from("/tmp/mine/lib.so")));
        assert_eq!(check("/home/me/cache/../mine/./lib.so"), Ok(PathBuf::from("/tmp/mine/lib.so")));
        let owner = Why::Owner { uid: OTHER, euid: ME };
        assert_eq!(check("/home/me/elsewhere/x"), Err(Refused { path: "/home/other".into(), why: owner }));
        assert_eq!(check("/home/me/loop").unwrap_err().why, Why::TooManyLinks);
        assert_eq!(check("/home/me/nothing").unwrap_err().why, Why::Missing);
        assert_eq!(check("/tmp/mine/lib.so/x").unwrap_err().why, Why::NotADirectory);
        assert_eq!(check("relative").unwrap_err().why, Why::NotAbsolute);
        // Sticky helps only a directory of root's.
        fs.dir("/tmp/mine", ME, 0o1777);
        let refused = super::check(&fs, Path::new("/tmp/mine/lib.so"), ME).unwrap_err();
        assert_eq!(refused.why, Why::Writable { mode: 0o1777 });
    }

    /// Who owns a directory of a chain, as the property test draws it.
    #[derive(Clone, Copy, Debug)]
    enum Owner {
        Us,
        Root,
        Other,
    }

    fn chain() -> impl Strategy<Value = Vec<(Owner, u32)>> {
        let owner = prop_oneof![Just(Owner::Us), Just(Owner::Root), Just(Owner::Other)];
        // Owner rwx always (so a test that is not root can walk a real chain), then any of
        // group/other write and the sticky bit, with the read and search bits beside them.
        let bits = [0o055, 0o020, 0o002, 0o1000];
        let mode = prop::array::uniform4(any::<bool>())
            .prop_map(move |on| bits.iter().zip(on).filter(|(_, on)| *on).fold(0o700, |mode, (bit, _)| mode | bit));
        prop::collection::vec((owner, mode), 1..6)
    }

    /// The rule, said another way: every directory is root's or ours, and has no group or
    /// other write bit unless it is root's and sticky.
    fn reference(chain: &[(u32, u32)], euid: u32) -> bool {
        chain.iter().all(|&(uid, mode)| {
            let ours_or_roots = uid == 0 || uid == euid;
            let closed = mode & 0o022 == 0 || (uid == 0 && mode & 0o1000 != 0);
            ours_or_roots && closed
        })
    }

    fn uid_of(owner: Owner, euid: u32) -> u32 {
        match owner {
            Owner::Us => euid,
            Owner::Root => 0,
            Owner::Other => OTHER,
        }
    }

    proptest! {
        #[test]
        fn the_check_accepts_the_chains_the_reference_accepts(
            chain in chain(), euid in prop_oneof![Just(0u32), Just(ME)], through_a_link in any::<bool>(),
        ) {
            let mut fs = Model::with_root();
            let mut path = String::new();
            let mut uids = Vec::new();
            for (i, &(owner, mode)) in chain.iter().enumerate() {
                path.push_str(&format!("/d{i}"));
                fs.dir(&path, uid_of(owner, euid), mode);
                uids.push((uid_of(owner, euid), mode));
            }
            fs.file(&format!("{path}/lib.so"), euid, 0o644);
            let mut asked = format!("{path}/lib.so");
            if through_a_link {
                // A link of ours to the chain: its target is held to the same rule.
                fs.dir("/mine", euid, 0o700);
                fs.link("/mine/link", &path);
                asked = "/mine/link/lib.so".into();
            }
            let verdict = check(&fs, Path::new(&asked), euid);
            prop_assert_eq!(verdict.is_ok(), reference(&uids, euid), "{:?}", verdict);
            if let Ok(resolved) = verdict {
                prop_assert_eq!(resolved, PathBuf::from(format!("{path}/lib.so")));
            }
        }

        /// The same on real directories (owners other than ours only where we are root).
        #[test]
        fn real_chains_agree_with_the_reference(chain in chain()) {
            use std::os::unix::fs::PermissionsExt;
            let euid = euid();
            let root = euid == 0;
            let base = tempfile::tempdir().unwrap();
            let base_path = check(&Host, base.path(), euid).expect("the temporary directory is trusted");
            let mut path = base_path.clone();
            let mut uids = Vec::new();
            for (i, &(owner, mode)) in chain.iter().enumerate() {
                path.push(format!("d{i}"));
                std::fs::create_dir(&path).unwrap();
                let uid = if root { uid_of(owner, euid) } else { euid };
                std::os::unix::fs::chown(&path, Some(uid), None).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
                uids.push((uid, mode));
            }
            let file = path.join("lib.so");
            std::fs::write(&file, b"a library").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            let verdict = check(&Host, &file, euid);
            prop_assert_eq!(verdict.is_ok(), reference(&uids, euid), "{:?}", verdict);
        }
    }

    #[test]
    fn directories_are_made_private_below_a_trusted_one() {
        let base = tempfile::tempdir().unwrap();
        let euid = euid();
        let made = create_dir_all(&Host, &base.path().join("a/b"), euid).unwrap();
        assert_eq!(std::fs::metadata(&made).unwrap().mode() & 0o777, 0o700);
        let open = base.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = create_dir_all(&Host, &open.join("c"), euid).unwrap_err();
        assert_eq!(refused.why, Why::Writable { mode: 0o777 });
        // Nothing is made below a directory that failed.
        assert!(!open.join("c").exists());
    }
}
