//! Reading the environment: a variable is unset, or set to text. A value that is not UTF-8 is
//! an error that names the variable, never taken as unset: a guard such as
//! `PEERPOOL_REQUIRE_GPUS` must not fail open because of one stray byte.
//!
//! Every setting peerpool, its simulator, its command and its fixtures read as text goes
//! through [`var`]; paths (`PEERPOOL_REPORT_DIR`, `XDG_RUNTIME_DIR`) are read as they are,
//! bytes and all.

use std::ffi::OsString;

/// A variable set to a value that is not UTF-8.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name} is set to a value that is not UTF-8 ({}); set it to text, or unset it", shown(value))]
pub struct NotUnicode {
    /// The variable.
    pub name: String,
    /// Its value.
    pub value: OsString,
}

impl NotUnicode {
    /// The value with each byte that is not UTF-8 replaced by U+FFFD, for a record that must
    /// keep what it can.
    pub fn lossy(&self) -> String {
        self.value.to_string_lossy().into_owned()
    }
}

/// The value of `name`: `None` when unset, an error when set to bytes that are not UTF-8.
pub fn var(name: &str) -> Result<Option<String>, NotUnicode> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(value) => match value.into_string() {
            Ok(text) => Ok(Some(text)),
            Err(value) => Err(NotUnicode { name: name.to_string(), value }),
        },
    }
}

/// The longest part of a value shown in an error, in bytes.
const SHOWN_BYTES: usize = 64;

/// `value` quoted, printable ASCII as it is and every other byte as `\xNN`, cut at
/// [`SHOWN_BYTES`]: nothing in it reaches a terminal as a control sequence.
fn shown(value: &OsString) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = value.as_bytes();
    let mut text = String::from("\"");
    for &b in bytes.iter().take(SHOWN_BYTES) {
        match b {
            b'"' | b'\\' => text.extend(['\\', b as char]),
            0x20..=0x7e => text.push(b as char),
            _ => text.push_str(&format!("\\x{b:02x}")),
        }
    }
    text.push('"');
    if bytes.len() > SHOWN_BYTES {
        text.push_str(&format!(" (the first {SHOWN_BYTES} of {} bytes)", bytes.len()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn a_value_that_is_not_utf8_is_shown_escaped_and_cut() {
        let error = NotUnicode { name: "X".into(), value: OsString::from_vec(b"2\xff\x1b[2J\"".to_vec()) };
        assert_eq!(
            error.to_string(),
            r#"X is set to a value that is not UTF-8 ("2\xff\x1b[2J\""); set it to text, or unset it"#
        );
        assert_eq!(error.lossy(), "2\u{fffd}\u{1b}[2J\"");
        let long = NotUnicode { name: "X".into(), value: OsString::from_vec(vec![0xff; 1 << 20]) };
        assert!(long.to_string().len() < 400 && long.to_string().contains("of 1048576 bytes"), "{long}");
    }

    #[test]
    fn an_unset_variable_is_none() {
        assert_eq!(var("PEERPOOL_SURELY_NEVER_SET_ANYWHERE"), Ok(None));
        assert_eq!(var("PATH").map(|p| p.is_some()), Ok(std::env::var_os("PATH").is_some()));
    }
}
