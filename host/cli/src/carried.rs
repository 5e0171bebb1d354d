//! The libcuda shim this binary carries when built from a package (`build.rs`): written to the
//! user's cache directory, once per content, for `peerpool sim` to put on the library path.

use peerpool::owned_dir::OwnedDir;
use std::path::{Path, PathBuf};

#[cfg(embedded_shim)]
const SHIM: Option<&[u8]> = Some(include_bytes!(env!("PEERPOOL_EMBEDDED_SHIM")));
#[cfg(not(embedded_shim))]
const SHIM: Option<&[u8]> = None;

/// The carried shim's file, named `file`, written if it is not there yet; `None` when this
/// binary carries none.
pub fn shim(file: &str) -> Option<Result<PathBuf, String>> {
    let bytes = SHIM?;
    Some(cache_dir().and_then(|dir| write_once(&dir, file, bytes)))
}

/// `$XDG_CACHE_HOME/peerpool`, else `$HOME/.cache/peerpool`.
fn cache_dir() -> Result<PathBuf, String> {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute("XDG_CACHE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".cache")))
        .ok_or("neither XDG_CACHE_HOME nor HOME names a directory for the shim this binary carries")?;
    Ok(base.join("peerpool"))
}

/// `bytes` as `file` in a directory of `dir` named for its version and content (one directory
/// per build: a running program keeps its own), written unless a file there holds them already.
fn write_once(dir: &Path, file: &str, bytes: &[u8]) -> Result<PathBuf, String> {
    let name = format!("shim-{}-{:016x}", env!("CARGO_PKG_VERSION"), fnv1a(bytes));
    let dir = OwnedDir::create(&dir.join(name)).map_err(|e| e.to_string())?;
    match dir.read(file, bytes.len() as u64) {
        Ok(held) if held == bytes => Ok(dir.path().join(file)),
        _ => dir.write(file, bytes).map_err(|e| e.to_string()),
    }
}

/// FNV-1a: a name for the content that stays the same from one build of this command to the
/// next (std's hasher promises no such thing); what is found there is compared in full.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_is_written_once_and_rewritten_when_damaged() {
        let base = tempfile::tempdir().unwrap();
        let first = write_once(base.path(), "lib.so", b"a library").unwrap();
        assert_eq!(std::fs::read(&first).unwrap(), b"a library");
        let again = write_once(base.path(), "lib.so", b"a library").unwrap();
        assert_eq!(first, again);
        std::fs::write(&first, b"damaged").unwrap();
        assert_eq!(std::fs::read(write_once(base.path(), "lib.so", b"a library").unwrap()).unwrap(), b"a library");
        // Another content, another directory: a program still running keeps its library.
        let other = write_once(base.path(), "lib.so", b"another library").unwrap();
        assert_ne!(other.parent(), first.parent());
        assert_eq!(std::fs::read(&first).unwrap(), b"a library");
    }
}
