//! Output files named on the command line (`report --json`, `--markdown`): checked before any
//! work, and written only after both are staged, so a failure leaves the old pair whole.

use std::path::{Path, PathBuf};

/// Refuses two outputs that name one file (which would overwrite one report with the other),
/// or a path that cannot become a file (a directory, or no directory to put it in).
pub fn distinct(a: &Path, b: &Path) -> Result<(), String> {
    for path in [a, b] {
        if path.is_dir() {
            return Err(format!("{} is a directory; name a file", path.display()));
        }
        let parent = parent(path);
        if !parent.is_dir() {
            return Err(format!("{}: no directory {} to write it in", path.display(), parent.display()));
        }
    }
    if a == b || resolved(a).is_some_and(|r| Some(r) == resolved(b)) {
        return Err(format!("--json and --markdown both name {}", a.display()));
    }
    Ok(())
}

/// The directory a file named by `path` goes in.
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `path` with its directory made canonical (the name itself is not followed: a link there is
/// replaced when written).
fn resolved(path: &Path) -> Option<PathBuf> {
    Some(parent(path).canonicalize().ok()?.join(path.file_name()?))
}
