//! What simulated export handles refer to: one registry per process, shared by every
//! [`SimDriver`](super::SimDriver) in it, so that two simulators stand for two processes of
//! one machine.
//!
//! A POSIX-fd handle is a real eventfd whose counter holds the registry token (read back from
//! `/proc/self/fdinfo`, never consumed), so fd passing, close-on-exec and leak counts are real;
//! an fd that is no simulated handle names no entry. Byte handles (pointer export data, legacy
//! IPC handles, fabric handles) carry the token with a kind tag and a check word, so garbage
//! bytes are refused. The registry holds no fds and keeps no bytes alive (weak backings).

use super::memory::WeakBacking;
use cudarc::driver::sys::CUresult;
use peerpool::driver::HandleTypes;
use rustix::event::EventfdFlags;
use rustix::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a token names.
#[derive(Clone)]
pub(super) enum Entry {
    /// An exported pool.
    Pool { device: usize, handle_types: HandleTypes },
    /// One exported allocation of pool `pool` (the pool's token).
    Pointer { pool: u64, backing: WeakBacking, len: u64, device: usize },
    /// `cuMemAlloc` memory behind a legacy IPC handle.
    Legacy { backing: WeakBacking, len: u64, device: usize },
    /// A `cuMemCreate` allocation.
    Allocation { backing: WeakBacking, len: u64, device: usize, handle_types: HandleTypes },
}

static ENTRIES: Mutex<BTreeMap<u64, Entry>> = Mutex::new(BTreeMap::new());
/// Tokens fit an eventfd's initial value (32 bits); starting high keeps them off small counts.
static NEXT: AtomicU64 = AtomicU64::new(0x5000_0000);

fn entries() -> std::sync::MutexGuard<'static, BTreeMap<u64, Entry>> {
    ENTRIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new token for `entry`.
pub(super) fn register(entry: Entry) -> u64 {
    let token = NEXT.fetch_add(1, Ordering::Relaxed);
    entries().insert(token, entry);
    token
}

/// What `token` names, if anything.
pub(super) fn lookup(token: u64) -> Option<Entry> {
    entries().get(&token).cloned()
}

/// The kinds of 64-byte handle, told apart by their first eight bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Blob {
    Pointer,
    Legacy,
    FabricPool,
    FabricAllocation,
}

impl Blob {
    fn tag(self) -> [u8; 8] {
        match self {
            Blob::Pointer => *b"ppsimptr",
            Blob::Legacy => *b"ppsimipc",
            Blob::FabricPool => *b"ppsimfbp",
            Blob::FabricAllocation => *b"ppsimfba",
        }
    }
}

/// splitmix64's finaliser: a check word garbage is unlikely to match.
fn check_word(tag: [u8; 8], token: u64) -> u64 {
    let mut z = u64::from_le_bytes(tag) ^ token.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The handle bytes for `token`.
pub(super) fn seal(kind: Blob, token: u64) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    bytes[..8].copy_from_slice(&kind.tag());
    bytes[8..16].copy_from_slice(&token.to_le_bytes());
    bytes[16..24].copy_from_slice(&check_word(kind.tag(), token).to_le_bytes());
    bytes
}

/// The token in handle bytes of `kind`, if they are intact.
pub(super) fn unseal(kind: Blob, bytes: &[u8; 64]) -> Option<u64> {
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
    let token = word(8);
    let intact = bytes[..8] == kind.tag() && word(16) == check_word(kind.tag(), token);
    (intact && bytes[24..].iter().all(|&b| b == 0)).then_some(token)
}

/// A POSIX-fd handle for `token`: a close-on-exec eventfd counting `token`.
pub(super) fn export_fd(token: u64) -> Result<OwnedFd, CUresult> {
    let initial = u32::try_from(token).map_err(|_| CUresult::CUDA_ERROR_OUT_OF_MEMORY)?;
    rustix::event::eventfd(initial, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
        .map_err(|_| CUresult::CUDA_ERROR_OPERATING_SYSTEM)
}

/// The token a received fd carries: its eventfd counter, read without consuming it.
pub(super) fn fd_token(fd: BorrowedFd<'_>) -> Option<u64> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    let count = info.lines().find_map(|line| line.strip_prefix("eventfd-count:"))?;
    u64::from_str_radix(count.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_and_refuse_garbage() {
        let sealed = seal(Blob::Pointer, 0x5000_1234);
        assert_eq!(unseal(Blob::Pointer, &sealed), Some(0x5000_1234));
        assert_eq!(unseal(Blob::Legacy, &sealed), None, "another kind");
        let mut bent = sealed;
        bent[9] ^= 1;
        assert_eq!(unseal(Blob::Pointer, &bent), None, "a changed token fails the check");
        bent = sealed;
        bent[63] = 1;
        assert_eq!(unseal(Blob::Pointer, &bent), None);
        assert_eq!(unseal(Blob::Pointer, &[0; 64]), None);
    }

    #[test]
    fn an_eventfd_carries_its_token_unconsumed() {
        let fd = export_fd(0x5000_0042).unwrap();
        let borrowed = rustix::fd::AsFd::as_fd(&fd);
        assert_eq!(fd_token(borrowed), Some(0x5000_0042));
        assert_eq!(fd_token(borrowed), Some(0x5000_0042), "reading does not consume");
        let (pipe, _) = rustix::pipe::pipe().unwrap();
        assert_eq!(fd_token(rustix::fd::AsFd::as_fd(&pipe)), None);
    }
}
