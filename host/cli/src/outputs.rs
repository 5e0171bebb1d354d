//! Output files named on the command line (`report --json`, `--markdown`, `--junit`): checked
//! before any work, and written only after all are staged, so a failure leaves the old ones whole.

use std::path::{Path, PathBuf};

/// Refuses an output that may not be written (`peerpool::owned_dir::check_target`: only a
/// missing file or a regular one we may replace is; a FIFO, a device, a socket, a directory, a
/// link to one of those, or a name ending in `/` is not), and two outputs that name one file
/// (which would overwrite one report with another). Each output comes with the option that
/// names it.
pub fn refuse_unwritable(outputs: &[(&str, &Path)]) -> Result<(), String> {
    for (flag, path) in outputs {
        peerpool::owned_dir::check_target(path).map_err(|e| format!("{flag}: {e}"))?;
    }
    for (i, (a_flag, a)) in outputs.iter().enumerate() {
        for (b_flag, b) in &outputs[i + 1..] {
            if a == b || resolved(a).is_some_and(|r| Some(r) == resolved(b)) {
                return Err(format!("{a_flag} and {b_flag} both name {}", a.display()));
            }
        }
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
