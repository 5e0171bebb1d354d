//! Reading a file a user named (a topology, a timing model): at most a limit, never waiting on
//! what is not a file. A FIFO is opened without waiting for a writer (one with no writer reads
//! as empty; a pipe from `<(...)` reads as usual); a directory, a device or a socket is refused.
//! What cannot be read is said for what it is ([`readable`]): missing, a link loop, a link to
//! nothing, out of our permission, or not a file.

use rustix::fs::{FileType, OFlags};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens `path` as `options` say without waiting (a FIFO's open waits for the other end),
/// then makes the file block as usual for reads and writes.
pub(crate) fn open_without_waiting(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    let file = options.custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32).open(path)?;
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK)?;
    Ok(file)
}

/// Whether `path` can be read as a file or a pipe; if not, why, in words that follow its name
/// ("does not exist", "is a symbolic link loop", "is a character device, not a file or a pipe").
pub(crate) fn readable(path: &Path) -> Result<(), String> {
    let metadata = std::fs::metadata(path).map_err(|e| unreachable(path, &e))?;
    kind(FileType::from_raw_mode(std::os::unix::fs::MetadataExt::mode(&metadata)))
}

/// Why `path` could not be reached (`error` from following it), in words.
fn unreachable(path: &Path, error: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match error.kind() {
        _ if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => "is a symbolic link loop".into(),
        ErrorKind::NotFound if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => {
            "is a symbolic link to nothing".into()
        }
        ErrorKind::NotFound => "does not exist".into(),
        ErrorKind::NotADirectory => "does not exist (a part of its path is not a directory)".into(),
        ErrorKind::PermissionDenied => "cannot be read: permission denied".into(),
        _ => error.to_string(),
    }
}

/// Whether a file of `kind` is read: a regular file or a pipe.
fn kind(kind: FileType) -> Result<(), String> {
    let what = match kind {
        FileType::RegularFile | FileType::Fifo => return Ok(()),
        FileType::Directory => return Err("is a directory, not a file".into()),
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Socket => "a socket",
        _ => "an unknown kind of file",
    };
    Err(format!("is {what}, not a file or a pipe"))
}

/// The text of `path`, refused when longer than `limit` bytes or not UTF-8.
pub(crate) fn read_text(path: &Path, limit: usize) -> Result<String, String> {
    // Said for what it is before it is opened: opening a device can have effects.
    readable(path)?;
    let file = open_without_waiting(OpenOptions::new().read(true), path).map_err(|e| unreachable(path, &e))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| e.to_string())?;
    kind(FileType::from_raw_mode(stat.st_mode))?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() > limit {
        return Err(format!("longer than {limit} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".into())
}

/// `text` as JSON, refused when an object gives a key twice (serde_json keeps the last,
/// silently).
pub(crate) fn json_without_repeats(text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str::<Unrepeated>(text).map(|v| v.0).map_err(|e| peerpool::text::clipped(&e.to_string(), 600))
}

/// A JSON value whose objects give each key once.
struct Unrepeated(serde_json::Value);

impl<'de> serde::Deserialize<'de> for Unrepeated {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Unrepeated, D::Error> {
        deserializer.deserialize_any(UnrepeatedVisitor)
    }
}

struct UnrepeatedVisitor;

impl<'de> serde::de::Visitor<'de> for UnrepeatedVisitor {
    type Value = Unrepeated;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Unrepeated, E> {
        Ok(Unrepeated(v.into()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Unrepeated, E> {
        Ok(Unrepeated(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Unrepeated, E> {
        Ok(Unrepeated(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Unrepeated, E> {
        serde_json::Number::from_f64(v).map(|n| Unrepeated(n.into())).ok_or_else(|| E::custom("not a finite number"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Unrepeated, E> {
        Ok(Unrepeated(v.into()))
    }

    fn visit_string<E>(self, v: String) -> Result<Unrepeated, E> {
        Ok(Unrepeated(v.into()))
    }

    fn visit_unit<E>(self) -> Result<Unrepeated, E> {
        Ok(Unrepeated(serde_json::Value::Null))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Unrepeated, A::Error> {
        let mut items = Vec::new();
        while let Some(Unrepeated(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Unrepeated(items.into()))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Unrepeated, A::Error> {
        let mut fields = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Unrepeated(value) = map.next_value()?;
            if fields.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("\"{}\" is given twice", peerpool::text::echo(&key))));
            }
            fields.insert(key, value);
        }
        Ok(Unrepeated(fields.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{CWD, Mode};

    #[test]
    fn what_cannot_be_reached_is_said_for_what_it_is() {
        use std::io::{Error, ErrorKind};
        let path = Path::new("/nowhere/at/all");
        assert_eq!(unreachable(path, &Error::from(ErrorKind::PermissionDenied)), "cannot be read: permission denied");
        assert_eq!(unreachable(path, &Error::from(ErrorKind::NotFound)), "does not exist");
        let looped = Error::from_raw_os_error(rustix::io::Errno::LOOP.raw_os_error());
        assert_eq!(unreachable(path, &looped), "is a symbolic link loop");
    }

    #[test]
    fn files_and_pipes_are_read_and_nothing_else_waited_on() {
        let dir = std::env::temp_dir().join(format!("peerpool-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (file, fifo) = (dir.join("a.toml"), dir.join("fifo"));
        std::fs::write(&file, "name = 'x'").unwrap();
        rustix::fs::mknodat(CWD, &fifo, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
        assert_eq!(read_text(&file, 100).unwrap(), "name = 'x'");
        assert_eq!(read_text(&file, 5).unwrap_err(), "longer than 5 bytes");
        assert_eq!(read_text(&fifo, 100).unwrap(), "", "a FIFO nobody writes reads as empty, at once");
        assert!(read_text(&dir, 100).unwrap_err().contains("directory"));
        assert_eq!(read_text(Path::new("/dev/null"), 100).unwrap_err(), "is a character device, not a file or a pipe");
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        assert!(read_text(&file, 100).unwrap_err().contains("UTF-8"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
