//! Reading a file a user named (a topology, a timing model): at most a limit, never waiting on
//! what is not a file. A FIFO is opened without waiting for a writer (one with no writer reads
//! as empty; a pipe from `<(...)` reads as usual); a directory, a device or a socket is refused.

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

/// The text of `path`, refused when longer than `limit` bytes or not UTF-8.
pub(crate) fn read_text(path: &Path, limit: usize) -> Result<String, String> {
    let file = open_without_waiting(OpenOptions::new().read(true), path).map_err(|e| e.to_string())?;
    let kind = FileType::from_raw_mode(rustix::fs::fstat(&file).map_err(|e| e.to_string())?.st_mode);
    match kind {
        FileType::RegularFile | FileType::Fifo => {}
        FileType::Directory => return Err("is a directory, not a file".into()),
        _ => return Err(format!("is not a file or a pipe ({kind:?})")),
    }
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
        assert!(read_text(Path::new("/dev/null"), 100).unwrap_err().contains("not a file"));
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        assert!(read_text(&file, 100).unwrap_err().contains("UTF-8"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
