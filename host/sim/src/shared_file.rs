//! Bytes another process can map: a sealed memfd, mapped `MAP_SHARED`, that starts with a
//! header page saying what it holds (magic, nonce, kind, device, handle types, the lock word),
//! followed by the data.
//!
//! Why a memfd: a process of the same user that knows the holder's pid and the memfd's fd
//! number opens the very same file through `/proc/<pid>/fd/<n>` and maps the same pages, so two
//! programs on the libcuda shim share bytes as two processes on a GPU do (`handles.rs` says how
//! a handle names the file). The file is sealed against shrinking and growing, so no mapping of
//! it can fault (SIGBUS) past its end, whoever else holds it.
//!
//! Every access to the data holds the header's lock word (a spin lock on the shared page,
//! holding the holder's pid): a copy, or a kernel's system-scope atomic update, is one step for
//! every mapping in every process. A process that dies holding it (killed mid-copy) would stall
//! the others for ever, so a waiter takes a dead holder's lock over: dead is gone, or a zombie
//! its parent has not reaped yet (which `kill(pid, 0)` still finds), as `/proc/<pid>/stat`
//! says. A live holder is waited for at most [`PATIENCE`]; then the wait ends in a
//! [`Wedged`] error that names it, not a hang.

use peerpool::driver::HandleKinds;
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::{MemfdFlags, Mode, OFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};
use std::hash::{BuildHasher, Hasher};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MAGIC: u64 = u64::from_le_bytes(*b"ppsimshm");
/// The memfd's name; `/proc/<pid>/fd` shows it as `/memfd:peerpool-sim (deleted)`.
const NAME: &str = "peerpool-sim";
/// The header's size: the data starts on a page of its own.
const HEADER: usize = 4096;
/// Header words (native-endian u64s, read and written atomically): magic, nonce, kind, device,
/// handle types, data length, pool; then the lock word (u32).
const WORDS: usize = 7;
const LOCK_AT: usize = WORDS * 8;

/// What a shared file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// An exported pool: a header and no data.
    Pool = 1,
    /// One allocation of an exported pool.
    PoolMemory = 2,
    /// `cuMemAlloc` memory behind a legacy IPC handle.
    Legacy = 3,
    /// A `cuMemCreate` allocation.
    Allocation = 4,
}

impl Kind {
    fn from_word(word: u64) -> Option<Kind> {
        [Kind::Pool, Kind::PoolMemory, Kind::Legacy, Kind::Allocation].into_iter().find(|k| *k as u64 == word)
    }
}

/// What a shared file says of itself, fixed when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) kind: Kind,
    /// The owning device's ordinal, in the exporter's numbering.
    pub(super) device: u32,
    pub(super) handle_types: HandleKinds,
    /// For pool memory, the nonce of its pool's file (so it imports into that pool only); else 0.
    pub(super) pool: u64,
}

/// Where a shared file can be opened from: the process that holds it open, the fd number
/// there, and the nonce the file carries (which tells it from a later file at that number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Locator {
    pub(super) pid: u32,
    pub(super) fd: u32,
    pub(super) nonce: u64,
}

/// A shared file, open and mapped in this process; closed and unmapped on drop.
pub(super) struct SharedFile {
    fd: OwnedFd,
    base: NonNull<u8>,
    /// Bytes mapped: the header and the data.
    size: usize,
    header: Header,
    nonce: u64,
}

// SAFETY: the mapping belongs to this value alone (unmapped only by its drop); its data is only
// touched under the header's lock word and its header only through atomics, whichever thread
// holds the value.
unsafe impl Send for SharedFile {}
// SAFETY: as for `Send`: every access through `&self` is atomic or under the lock word.
unsafe impl Sync for SharedFile {}

/// Holds a file's lock word; releases it when dropped (a panic inside included).
struct Held<'a>(&'a AtomicU32);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// How long one live process may hold a file's lock before a waiter gives up: far longer than
/// any copy or kernel the simulator runs under it takes.
pub(super) const PATIENCE: Duration = Duration::from_secs(60);

/// A wait for the lock word that ended because its holder, alive, held it past the patience.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "process {holder} has held a shared allocation's lock for over {} s and is alive (stopped, or stuck \
     in a copy); waited no longer",
    waited.as_secs()
)]
pub(super) struct Wedged {
    /// The holder's pid.
    pub(super) holder: u32,
    /// How long it was waited for.
    pub(super) waited: Duration,
}

/// Whether the process `pid` can never release a lock: it is gone, or it has exited and only
/// waits to be reaped (a zombie, `Z`, or dying, `X`, in `/proc/<pid>/stat`).
fn is_dead(pid: u32) -> bool {
    match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(stat) => exited(&stat),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        // No /proc to read: a signal tells gone from alive, not a zombie from either.
        Err(_) => {
            let pid = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw);
            pid.is_some_and(|pid| rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH))
        }
    }
}

/// Whether a `/proc/<pid>/stat` line says the process has exited: its state, the field after
/// the command name in parentheses (which may hold spaces and parentheses itself), is `Z` or `X`.
fn exited(stat: &[u8]) -> bool {
    let Some(close) = stat.iter().rposition(|&b| b == b')') else { return false };
    matches!(stat.get(close + 1..close + 3), Some(b" Z" | b" X"))
}

/// A nonce no other file of ours is likely to carry: this process, a counter, the time,
/// hashed with std's randomly keyed hasher. Never 0.
fn fresh_nonce() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    hasher.finish().max(1)
}

impl SharedFile {
    /// A new file holding `header` and a copy of `data`, with a fresh nonce.
    pub(super) fn create(header: Header, data: &[u8]) -> std::io::Result<SharedFile> {
        let fd = rustix::fs::memfd_create(NAME, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
        let size = HEADER.checked_add(data.len()).ok_or(std::io::ErrorKind::OutOfMemory)?;
        rustix::fs::ftruncate(&fd, size as u64)?;
        rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
        let nonce = fresh_nonce();
        let file = SharedFile::map(fd, size, header, nonce)?;
        let words = [MAGIC, nonce, header.kind as u64, header.device.into(), header.handle_types.0.into()];
        for (i, value) in words.into_iter().chain([data.len() as u64, header.pool]).enumerate() {
            file.word(i).store(value, Ordering::Relaxed);
        }
        // SAFETY: the data area is `data.len()` bytes of the mapping this value owns, and nobody
        // else can reach the file yet: its fd has not been named to anyone.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), file.data(), data.len()) };
        Ok(file)
    }

    /// Opens and maps the file another process (or this one) holds at `fd`, if it is one of
    /// ours: a memfd of this name, sealed against shrinking and growing, with a header that
    /// reads back whole. Anything else (no such process or fd, another user's, a regular file,
    /// a pipe, a foreign memfd) is `None`; nothing is mapped before the seals are checked.
    pub(super) fn open(pid: u32, fd: u32) -> Option<SharedFile> {
        let path = format!("/proc/{pid}/fd/{fd}");
        let file = rustix::fs::open(path.as_str(), OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).ok()?;
        let seals = rustix::fs::fcntl_get_seals(&file).ok()?;
        let name = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
        let ours = name.as_os_str().as_encoded_bytes().starts_with(format!("/memfd:{NAME} ").as_bytes());
        if !ours || !seals.contains(SealFlags::SHRINK | SealFlags::GROW) {
            return None;
        }
        let size = usize::try_from(rustix::fs::fstat(&file).ok()?.st_size).ok().filter(|&s| s >= HEADER)?;
        let placeholder = Header { kind: Kind::Pool, device: 0, handle_types: HandleKinds::NONE, pool: 0 };
        let mut mapped = SharedFile::map(file, size, placeholder, 0).ok()?;
        let word = |i: usize| mapped.word(i).load(Ordering::Relaxed);
        let kind = Kind::from_word(word(2))?;
        let fits = u64::try_from(size - HEADER).is_ok_and(|len| len == word(5));
        if word(0) != MAGIC || !fits {
            return None;
        }
        let (device, handle_types) = (u32::try_from(word(3)).ok()?, HandleKinds(u32::try_from(word(4)).ok()?));
        let (header, nonce) = (Header { kind, device, handle_types, pool: word(6) }, word(1));
        (mapped.header, mapped.nonce) = (header, nonce);
        Some(mapped)
    }

    /// Maps all `size` bytes of `fd` shared, read-write.
    fn map(fd: OwnedFd, size: usize, header: Header, nonce: u64) -> std::io::Result<SharedFile> {
        let (prot, flags) = (ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED);
        // SAFETY: a new mapping at an address the kernel picks, of a file sealed against
        // shrinking that is at least `size` bytes long (made so, or measured by `open` after
        // the seals were checked): it replaces nothing, and every page of it stays backed.
        let base = unsafe { rustix::mm::mmap(std::ptr::null_mut(), size, prot, flags, fd.as_fd(), 0) }?;
        let base = NonNull::new(base.cast::<u8>()).ok_or(std::io::ErrorKind::AddrNotAvailable)?;
        Ok(SharedFile { fd, base, size, header, nonce })
    }

    /// Header word `i` (`i < WORDS`).
    fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < WORDS);
        // SAFETY: inside the header of the mapping `self` owns for as long as the borrow;
        // page-aligned base, so 8-aligned; every process reads it only atomically.
        unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(i * 8).cast()) }
    }

    fn lock_word(&self) -> &AtomicU32 {
        // SAFETY: as in `word`; 4-aligned, after the header words, inside the header page.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(LOCK_AT).cast()) }
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: `size >= HEADER`, so the result is inside (or one past the end of) the mapping.
        unsafe { self.base.as_ptr().add(HEADER) }
    }

    /// What the file holds.
    pub(super) fn header(&self) -> Header {
        self.header
    }

    /// Its nonce (never 0).
    pub(super) fn nonce(&self) -> u64 {
        self.nonce
    }

    /// Its data's length.
    pub(super) fn len(&self) -> usize {
        self.size - HEADER
    }

    /// Where another process opens it: this process and this value's fd.
    pub(super) fn locator(&self) -> Locator {
        Locator { pid: std::process::id(), fd: self.fd.as_raw_fd() as u32, nonce: self.nonce }
    }

    /// Takes the lock word: spins, then yields; takes over a lock whose holder has died (or is
    /// a zombie); gives up on a live holder that keeps it longer than `patience`.
    fn lock(&self, patience: Duration) -> Result<Held<'_>, Wedged> {
        let (word, me) = (self.lock_word(), std::process::id());
        let mut tries = 0u64;
        // The holder seen at the last check, and since when.
        let mut seen: Option<(u32, Instant)> = None;
        loop {
            let holder = match word.compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Ok(Held(word)),
                Err(holder) => holder,
            };
            tries += 1;
            if tries.is_multiple_of(4096) && holder != 0 {
                if holder != me && is_dead(holder) {
                    if word.compare_exchange(holder, me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                        return Ok(Held(word));
                    }
                    continue;
                }
                match seen {
                    Some((before, since)) if before == holder => {
                        if since.elapsed() > patience {
                            return Err(Wedged { holder, waited: since.elapsed() });
                        }
                    }
                    _ => seen = Some((holder, Instant::now())),
                }
            } else if tries < 128 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Runs `f` on data bytes `[offset, offset + len)` under the lock word: one atomic step for
    /// every process and mapping.
    ///
    /// # Panics
    /// When the range is not inside the data (callers check ranges against their allocations
    /// first), or with the [`Wedged`] message when a live process holds the lock past
    /// [`PATIENCE`] ([`SharedFile::try_with`] returns that as an error).
    pub(super) fn with<R>(&self, offset: usize, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
        self.try_with(offset, len, PATIENCE, f).unwrap_or_else(|wedged| panic!("{wedged}"))
    }

    /// [`SharedFile::with`], waiting for the lock at most `patience` for one live holder.
    pub(super) fn try_with<R>(
        &self,
        offset: usize,
        len: usize,
        patience: Duration,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R, Wedged> {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len()), "outside the shared file");
        let _held = self.lock(patience)?;
        // SAFETY: inside the data of the mapping `self` owns (checked above). Every mapping of
        // the file in every process touches data only while holding the lock word, which we
        // hold until after `f` returns, so nothing else reads or writes these bytes meanwhile.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.data().add(offset), len) };
        Ok(f(bytes))
    }
}

impl Drop for SharedFile {
    fn drop(&mut self) {
        // SAFETY: the mapping `map` made, of this size, unmapped once; no borrow of it outlives
        // `&self`, so none is live now.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.size) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOL_MEMORY: Header = Header { kind: Kind::PoolMemory, device: 1, handle_types: HandleKinds(1), pool: 7 };

    #[test]
    fn a_second_mapping_sees_the_same_bytes_and_header() {
        let file = SharedFile::create(POOL_MEMORY, &[1, 2, 3, 4]).unwrap();
        let Locator { pid, fd, nonce } = file.locator();
        let again = SharedFile::open(pid, fd).unwrap();
        assert_eq!((again.header(), again.nonce(), again.len()), (POOL_MEMORY, nonce, 4));
        again.with(1, 2, |b| b.copy_from_slice(&[9, 9]));
        assert_eq!(file.with(0, 4, |b| b.to_vec()), [1, 9, 9, 4]);
        assert_ne!(SharedFile::create(POOL_MEMORY, &[]).unwrap().nonce(), nonce, "every file its own nonce");
    }

    #[test]
    fn only_our_sealed_memfds_open() {
        let file = SharedFile::create(POOL_MEMORY, &[0; 8]).unwrap();
        let Locator { pid, fd, nonce } = file.locator();
        drop(file);
        assert!(SharedFile::open(pid, fd).is_none_or(|other| other.nonce() != nonce), "closed: nothing, or another");
        let (pipe, _) = rustix::pipe::pipe().unwrap();
        assert!(SharedFile::open(pid, pipe.as_raw_fd() as u32).is_none());
        let foreign = rustix::fs::memfd_create("peerpool-sim", MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&foreign, HEADER as u64).unwrap();
        assert!(SharedFile::open(pid, foreign.as_raw_fd() as u32).is_none(), "unsealed");
        let regular = std::fs::File::open("/proc/self/exe").unwrap();
        assert!(SharedFile::open(pid, regular.as_raw_fd() as u32).is_none());
        assert!(SharedFile::open(u32::MAX, 0).is_none());
    }

    #[test]
    fn updates_through_two_mappings_are_atomic() {
        let file = SharedFile::create(POOL_MEMORY, &[0; 8]).unwrap();
        let Locator { pid, fd, .. } = file.locator();
        let other = SharedFile::open(pid, fd).unwrap();
        let start = std::sync::Barrier::new(4);
        let add = |mapping: &SharedFile| {
            start.wait();
            for _ in 0..500 {
                mapping.with(0, 8, |b| {
                    let value = u64::from_le_bytes(b.try_into().unwrap()) + 1;
                    std::thread::yield_now(); // an unlocked update would lose others' meanwhile
                    b.copy_from_slice(&value.to_le_bytes());
                });
            }
        };
        std::thread::scope(|s| {
            for mapping in [&file, &other, &file, &other] {
                s.spawn(|| add(mapping));
            }
        });
        assert_eq!(file.with(0, 8, |b| u64::from_le_bytes(b.try_into().unwrap())), 2000);
    }

    #[test]
    fn a_dead_holders_lock_is_taken_over() {
        let file = SharedFile::create(POOL_MEMORY, &[5]).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        file.lock_word().store(gone, Ordering::Relaxed);
        assert_eq!(file.with(0, 1, |b| b[0]), 5);
        assert_eq!(file.lock_word().load(Ordering::Relaxed), 0, "released after use");
    }

    #[test]
    fn a_live_holder_is_waited_for_at_most_the_patience() {
        let file = SharedFile::create(POOL_MEMORY, &[5]).unwrap();
        let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        file.lock_word().store(sleeper.id(), Ordering::Relaxed);
        let started = Instant::now();
        let waited = file.try_with(0, 1, Duration::from_millis(300), |b| b[0]);
        let took = started.elapsed();
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        let wedged = waited.unwrap_err();
        assert_eq!(wedged.holder, sleeper.id());
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(10), "{took:?}");
        let message = wedged.to_string();
        assert!(message.contains(&sleeper.id().to_string()) && !message.contains('\n'), "{message}");
        assert_eq!(file.lock_word().load(Ordering::Relaxed), sleeper.id(), "a live holder's lock is not taken");
    }

    #[test]
    fn a_stat_line_is_read_past_a_command_name_holding_parentheses() {
        assert!(!exited(b"42 (a) Z (b)) S 1 2"), "the last ')' ends the name: `a) Z (b` is running");
        assert!(exited(b"42 (a) S (b)) Z 1 2") && exited(b"42 (x) X 1"));
        assert!(!exited(b"42 (a) R 1 2") && !exited(b"42 (a) T 1") && !exited(b"42 (sleep) S 1"));
        assert!(!exited(b"") && !exited(b"42 (a"));
    }

    /// A holder killed while it holds the lock, and not yet reaped by its parent, is a zombie:
    /// `kill(pid, 0)` still finds it, but it will never release the lock.
    #[test]
    fn a_killed_holders_lock_is_taken_over_before_it_is_reaped() {
        let file = std::sync::Arc::new(SharedFile::create(POOL_MEMORY, &[5]).unwrap());
        // SAFETY: the child runs only async-signal-safe code (an atomic store to the shared
        // mapping it inherited, getpid and pause) until it is killed; it never returns here.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            // SAFETY: as above.
            let me = unsafe { libc::getpid() } as u32;
            file.lock_word().store(me, Ordering::Release);
            loop {
                // SAFETY: as above.
                unsafe { libc::pause() };
            }
        }
        let started = std::time::Instant::now();
        while file.lock_word().load(Ordering::Acquire) != child as u32 {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "the child never took the lock");
            std::thread::yield_now();
        }
        // SAFETY: signals our own child, which is not reaped, so its pid is still its own.
        assert_eq!(unsafe { libc::kill(child, libc::SIGKILL) }, 0);
        let zombie = || std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|s| s.contains(") Z "));
        while !zombie() {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "the child never became a zombie");
            std::thread::yield_now();
        }
        let (done, finished) = std::sync::mpsc::channel();
        let reader = std::sync::Arc::clone(&file);
        std::thread::spawn(move || done.send(reader.with(0, 1, |b| b[0])));
        let read = finished.recv_timeout(std::time::Duration::from_secs(20));
        // SAFETY: reaps our own child, killed above.
        unsafe { libc::waitpid(child, std::ptr::null_mut(), 0) };
        assert_eq!(read, Ok(5), "the lock of a killed, unreaped holder was never taken over");
        assert_eq!(file.lock_word().load(Ordering::Relaxed), 0, "released after use");
    }
}
