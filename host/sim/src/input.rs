//! Reading a file a user named (a topology, a timing model): at most a limit, never waiting on
//! what is not a file. A FIFO is opened without waiting for a writer (one with no writer reads
//! as empty; a pipe from `<(...)` reads as usual), and a writer that sends nothing for
//! [`PIPE_PATIENCE`] is given up on; a directory, a device or a socket is refused.
//! What cannot be read is said for what it is ([`readable`]): missing, a link loop, a link to
//! nothing, out of our permission, or not a file.

use rustix::fs::{FileType, OFlags};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a pipe's writer may send nothing before the read gives up on it.
pub(crate) const PIPE_PATIENCE: Duration = Duration::from_secs(10);

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

/// The text of `path`, refused when longer than `limit` bytes or not UTF-8, or when it is a
/// pipe whose writer sends nothing for [`PIPE_PATIENCE`].
pub(crate) fn read_text(path: &Path, limit: usize) -> Result<String, String> {
    read_text_within(path, limit, PIPE_PATIENCE)
}

/// [`read_text`], giving up on a silent pipe after `patience`.
fn read_text_within(path: &Path, limit: usize, patience: Duration) -> Result<String, String> {
    // Said for what it is before it is opened: opening a device can have effects.
    readable(path)?;
    let file = open_without_waiting(OpenOptions::new().read(true), path).map_err(|e| unreachable(path, &e))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| e.to_string())?;
    let file_type = FileType::from_raw_mode(stat.st_mode);
    kind(file_type)?;
    let mut bytes = Vec::new();
    match file_type {
        FileType::Fifo => read_pipe(file, limit, patience, &mut bytes)?,
        _ => {
            file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        }
    }
    if bytes.len() > limit {
        return Err(format!("longer than {limit} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".into())
}

/// Reads `file`, a pipe, to its end or past `limit` bytes, waiting at most `patience` for each
/// piece: a writer that keeps it open and sends nothing is given up on, not waited for.
fn read_pipe(file: File, limit: usize, patience: Duration, bytes: &mut Vec<u8>) -> Result<(), String> {
    let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| e.to_string())?;
    rustix::fs::fcntl_setfl(&file, flags | OFlags::NONBLOCK).map_err(|e| e.to_string())?;
    let mut piece = vec![0u8; 64 << 10];
    let mut heard = Instant::now();
    while bytes.len() <= limit {
        match rustix::io::read(&file, &mut piece) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                bytes.extend_from_slice(&piece[..n]);
                heard = Instant::now();
            }
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {
                let left = patience.saturating_sub(heard.elapsed());
                if left.is_zero() {
                    return Err(format!(
                        "is a pipe whose writer sent nothing for {} s (and did not close it)",
                        patience.as_secs_f64()
                    ));
                }
                let timeout = rustix::event::Timespec::try_from(left)
                    .unwrap_or(rustix::event::Timespec { tv_sec: 1, tv_nsec: 0 });
                let mut fds = [rustix::event::PollFd::new(&file, rustix::event::PollFlags::IN)];
                match rustix::event::poll(&mut fds, Some(&timeout)) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
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
    use std::io::Write;

    /// A FIFO whose writer opened it and never writes hung the reader silently.
    #[test]
    fn a_pipe_whose_writer_sends_nothing_is_given_up_on() {
        let dir = std::env::temp_dir().join(format!("peerpool-input-silent-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("silent.toml");
        rustix::fs::mknodat(CWD, &fifo, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
        // Both ends open here: a writer that never writes.
        let writer = OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
        let (done, read) = std::sync::mpsc::channel();
        let path = fifo.clone();
        let patience = Duration::from_millis(300);
        std::thread::spawn(move || done.send(read_text_within(&path, 100, patience)));
        let result = read.recv_timeout(Duration::from_secs(30));
        // A writer that sends and closes is read as usual.
        let (done, read) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || done.send(read_text_within(&path, 100, patience)));
        std::thread::sleep(Duration::from_millis(50));
        (&writer).write_all(b"name = 'piped'").unwrap();
        drop(writer);
        let piped = read.recv_timeout(Duration::from_secs(30));
        std::fs::remove_dir_all(&dir).unwrap();
        let error = result.expect("the read returned").unwrap_err();
        assert!(error.contains("sent nothing for 0.3 s"), "{error}");
        assert_eq!(piped.expect("the read returned"), Ok("name = 'piped'".to_string()));
        assert_eq!(PIPE_PATIENCE, Duration::from_secs(10));
    }

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
