//! What simulated export handles carry: where the exporter's shared file is
//! (`shared_file.rs`), so that a handle works in any process of the same user on this machine,
//! the exporting one included. There is no registry: the exporter's fd table is one, and
//! `/proc/<pid>/fd/<n>` the lookup.
//!
//! A POSIX-fd handle is a real eventfd (fd passing, close-on-exec and leak counts stay real,
//! and peerpool's importer accepts it as a device handle) whose 64-bit counter names the file:
//! the exporter's pid (22 bits: Linux pids stay below 2^22), the file's fd number there (20
//! bits) and 21 bits of the file's nonce. `eventfd` starts from 32 bits, so the value is
//! written; it is read back from `/proc/self/fdinfo`, never consumed. Byte handles (pointer
//! export data, legacy IPC handles, fabric handles) carry pid, fd number and the whole nonce
//! with a kind tag and a check word, so garbage bytes are refused before any file is opened.
//!
//! The file must carry the nonce the handle names: a file the exporter has closed (the memory
//! freed, the process gone) names nothing, even when its fd number or pid is used again.

use super::shared_file::{Locator, SharedFile};
use peerpool::CudaCode;
use peerpool::driver::ExportedHandleRef;
use rustix::event::EventfdFlags;
use rustix::fd::{AsRawFd, BorrowedFd, OwnedFd};

const PID_BITS: u32 = 22;
const FD_BITS: u32 = 20;
/// The nonce bits an eventfd carries: what is left below bit 63 (an eventfd counts to 2^64 - 2).
const CHECK_BITS: u32 = 63 - PID_BITS - FD_BITS;

fn low(bits: u32) -> u64 {
    (1 << bits) - 1
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

/// splitmix64's finaliser over the tag and the locator: a check word garbage is unlikely to match.
fn check_word(tag: [u8; 8], at: Locator) -> u64 {
    let place = (u64::from(at.pid) << 32) | u64::from(at.fd);
    let mut z = u64::from_le_bytes(tag) ^ place.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ at.nonce.rotate_left(17);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The handle bytes naming the file at `at`.
pub(super) fn seal(kind: Blob, at: Locator) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    bytes[..8].copy_from_slice(&kind.tag());
    bytes[8..12].copy_from_slice(&at.pid.to_le_bytes());
    bytes[12..16].copy_from_slice(&at.fd.to_le_bytes());
    bytes[16..24].copy_from_slice(&at.nonce.to_le_bytes());
    bytes[24..32].copy_from_slice(&check_word(kind.tag(), at).to_le_bytes());
    bytes
}

/// The locator in handle bytes of `kind`, if they are intact.
pub(super) fn unseal(kind: Blob, bytes: &[u8; 64]) -> Option<Locator> {
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
    let half = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or_default());
    let at = Locator { pid: half(8), fd: half(12), nonce: word(16) };
    let intact = bytes[..8] == kind.tag() && word(24) == check_word(kind.tag(), at);
    (intact && bytes[32..].iter().all(|&b| b == 0)).then_some(at)
}

/// The eventfd counter naming `at`, if its pid and fd number fit.
fn counter(at: Locator) -> Option<u64> {
    let (pid, fd) = (u64::from(at.pid), u64::from(at.fd));
    let fits = pid <= low(PID_BITS) && fd <= low(FD_BITS);
    fits.then_some(pid | fd << PID_BITS | (at.nonce & low(CHECK_BITS)) << (PID_BITS + FD_BITS))
}

/// A POSIX-fd handle naming `at`: a close-on-exec eventfd counting [`counter`].
pub(super) fn export_fd(at: Locator) -> Result<OwnedFd, CudaCode> {
    let value = counter(at).ok_or(CudaCode::CUDA_ERROR_OPERATING_SYSTEM)?;
    let failed = |_| CudaCode::CUDA_ERROR_OPERATING_SYSTEM;
    let fd = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).map_err(failed)?;
    match rustix::io::write(&fd, &value.to_ne_bytes()).map_err(failed)? {
        8 => Ok(fd),
        _ => Err(CudaCode::CUDA_ERROR_OPERATING_SYSTEM),
    }
}

/// The counter of a received eventfd, read without consuming it; `None` for anything else.
fn fd_counter(fd: BorrowedFd<'_>) -> Option<u64> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    let count = info.lines().find_map(|line| line.strip_prefix("eventfd-count:"))?;
    u64::from_str_radix(count.trim(), 16).ok()
}

/// The shared file a received handle names, opened and mapped here, if it still exists.
pub(super) fn open(handle: ExportedHandleRef<'_>, fabric: Blob) -> Option<SharedFile> {
    match handle {
        ExportedHandleRef::Fd(fd) => {
            let value = fd_counter(fd)?;
            let (pid, number) = ((value & low(PID_BITS)) as u32, (value >> PID_BITS & low(FD_BITS)) as u32);
            let file = SharedFile::open(pid, number)?;
            (file.nonce() & low(CHECK_BITS) == value >> (PID_BITS + FD_BITS)).then_some(file)
        }
        ExportedHandleRef::Fabric(bytes) => open_bytes(fabric, &bytes.0),
    }
}

/// The shared file handle bytes of `kind` name, opened and mapped here, if it still exists.
pub(super) fn open_bytes(kind: Blob, bytes: &[u8; 64]) -> Option<SharedFile> {
    let at = unseal(kind, bytes)?;
    SharedFile::open(at.pid, at.fd).filter(|file| file.nonce() == at.nonce)
}

/// The handle `kind` asks for, naming the file at `at`.
pub(super) fn handle_for(
    at: Locator,
    kind: peerpool::driver::HandleKind,
    fabric: Blob,
) -> Result<peerpool::driver::ExportedHandle, CudaCode> {
    use peerpool::driver::{ExportedHandle, FabricHandle, HandleKind};
    match kind {
        HandleKind::PosixFd => export_fd(at).map(ExportedHandle::Fd),
        HandleKind::Fabric => Ok(ExportedHandle::Fabric(FabricHandle(seal(fabric, at)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared_file::{Header, Kind};
    use peerpool::driver::{FabricHandle, HandleKinds};
    use rustix::fd::AsFd;

    const AT: Locator = Locator { pid: 4_000_000, fd: 1000, nonce: 0x0123_4567_89ab_cdef };

    #[test]
    fn blobs_round_trip_and_refuse_garbage() {
        let sealed = seal(Blob::Pointer, AT);
        assert_eq!(unseal(Blob::Pointer, &sealed), Some(AT));
        assert_eq!(unseal(Blob::Legacy, &sealed), None, "another kind");
        for byte in [9, 13, 20] {
            let mut bent = sealed;
            bent[byte] ^= 1;
            assert_eq!(unseal(Blob::Pointer, &bent), None, "a changed locator fails the check");
        }
        let mut bent = sealed;
        bent[63] = 1;
        assert_eq!(unseal(Blob::Pointer, &bent), None);
        assert_eq!(unseal(Blob::Pointer, &[0; 64]), None);
    }

    #[test]
    fn an_eventfd_counts_beyond_32_bits_unconsumed() {
        let fd = export_fd(AT).unwrap();
        let value = counter(AT).unwrap();
        assert!(value > u64::from(u32::MAX) && value < 1 << 63);
        assert_eq!(fd_counter(fd.as_fd()), Some(value));
        assert_eq!(fd_counter(fd.as_fd()), Some(value), "reading does not consume");
        let (pipe, _) = rustix::pipe::pipe().unwrap();
        assert_eq!(fd_counter(pipe.as_fd()), None);
        assert_eq!(counter(Locator { fd: 1 << 20, ..AT }), None, "an fd number past 20 bits");
    }

    #[test]
    fn handles_open_the_file_they_name_and_nothing_else() {
        let header = Header { kind: Kind::Legacy, device: 0, handle_types: HandleKinds::NONE, pool: 0 };
        let file = SharedFile::create(header, &[7; 16]).unwrap();
        let at = file.locator();
        let fd = export_fd(at).unwrap();
        let opened = open(ExportedHandleRef::Fd(fd.as_fd()), Blob::FabricPool).unwrap();
        assert_eq!((opened.nonce(), opened.with(0, 16, |b| b.to_vec())), (at.nonce, vec![7; 16]));
        let fabric = FabricHandle(seal(Blob::FabricAllocation, at));
        assert!(open(ExportedHandleRef::Fabric(&fabric), Blob::FabricAllocation).is_some());
        assert!(open(ExportedHandleRef::Fabric(&fabric), Blob::FabricPool).is_none(), "another kind of handle");
        let stale = seal(Blob::Legacy, Locator { nonce: at.nonce ^ 1, ..at });
        assert!(open_bytes(Blob::Legacy, &stale).is_none(), "another file at the same fd number");
        let stranger = rustix::event::eventfd(7, EventfdFlags::CLOEXEC).unwrap();
        assert!(open(ExportedHandleRef::Fd(stranger.as_fd()), Blob::FabricPool).is_none());
        let sealed = seal(Blob::Legacy, at);
        drop((file, opened));
        assert!(open_bytes(Blob::Legacy, &sealed).is_none(), "closed by its holder");
    }
}
