//! The libcuda shim this binary carries when built from a package (`build.rs`): written to the
//! user's cache directory, once per content, for `peerpool sim` to put on the library path.

use peerpool::owned_dir::OwnedDir;
use std::path::{Path, PathBuf};

/// The shim's bytes and a name for their content that stays the same from one build of this
/// command to the next (std's hasher promises no such thing), given by the build script.
#[cfg(embedded_shim)]
const SHIM: Option<(&[u8], &str)> =
    Some((include_bytes!(env!("PEERPOOL_EMBEDDED_SHIM")), env!("PEERPOOL_EMBEDDED_SHIM_ID")));
#[cfg(not(embedded_shim))]
const SHIM: Option<(&[u8], &str)> = None;

/// The carried shim's file, named `file`, written if it is not there yet; `None` when this
/// binary carries none.
pub fn shim(file: &str) -> Option<Result<PathBuf, String>> {
    let (bytes, id) = SHIM?;
    Some(cache_dir().and_then(|dir| write_once(&dir, file, bytes, id)))
}

/// `$XDG_CACHE_HOME/peerpool`, else `$HOME/.cache/peerpool`.
fn cache_dir() -> Result<PathBuf, String> {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute("XDG_CACHE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".cache")))
        .ok_or("neither XDG_CACHE_HOME nor HOME names a directory for the shim this binary carries")?;
    Ok(base.join("peerpool"))
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
}
