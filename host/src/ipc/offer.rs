//! [`Offer`]: what an exporter sends besides the file descriptor, in one message.
//!
//! Layout (little endian): `b"PPOF"`, version 2, path, handle type, flags (bit 0: staged copy,
//! bit 1: a fabric handle follows), device (u32), 4 reserved bytes, offset, len, span (u64
//! each), the device's 16-byte UUID, 64 bytes of driver data, then the 64-byte fabric handle
//! when flagged: 120 or 184 bytes. The driver data is opaque here; the importing driver judges
//! it. Version 2 added the UUID: two processes may number the GPUs differently
//! (`CUDA_VISIBLE_DEVICES`), so the importer finds the owner by its UUID, not its ordinal.

use super::share_error::ShareError;
use crate::driver::{FabricHandle, HandleKind};

const MAGIC: [u8; 4] = *b"PPOF";
const VERSION: u8 = 2;
const FIXED: usize = 56;
/// Bytes of an offer without a fabric handle.
pub const OFFER_LEN: usize = FIXED + 64;

/// How the memory travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OfferPath {
    /// Pool handle (fd or fabric) and `cuMemPoolExportPointer`'s data.
    Pool,
    /// A `cuMemCreate` allocation's handle (fd or fabric); the importer maps it.
    VirtualMemory,
    /// A legacy `cuIpcGetMemHandle` handle (64 bytes, no fd).
    Legacy,
}

/// One exported range, as the importer needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    /// How it travels.
    pub path: OfferPath,
    /// The handle type of the pool or allocation handle (POSIX fd for legacy handles).
    pub handle: HandleKind,
    /// A copy made for sharing, not the caller's memory: writes do not reach the original.
    pub staged: bool,
    /// The owning device, in the exporter's numbering (for messages: the importer goes by
    /// [`Offer::uuid`]).
    pub device: u32,
    /// The owning device's UUID (`cuDeviceGetUuid`), the same in every process: the importer
    /// imports on the device that has it and checks the imported memory is there.
    pub uuid: [u8; 16],
    /// Where the shared bytes start in what the handle maps.
    pub offset: u64,
    /// How many bytes are shared.
    pub len: u64,
    /// How many bytes the handle maps (a virtual-memory allocation's size, a legacy range's).
    pub span: u64,
    /// `CUmemPoolPtrExportData` (pool) or `CUipcMemHandle` (legacy); zero otherwise.
    pub data: [u8; 64],
    /// The fabric handle, when `handle` is [`HandleKind::Fabric`].
    pub fabric: Option<FabricHandle>,
}

impl Offer {
    /// How many fds travel with it: one for a POSIX-fd pool or allocation handle.
    pub fn fd_count(&self) -> usize {
        usize::from(self.path != OfferPath::Legacy && self.handle == HandleKind::PosixFd)
    }

    /// The message bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(OFFER_LEN + 64);
        out.extend_from_slice(&MAGIC);
        let path = match self.path {
            OfferPath::Pool => 0,
            OfferPath::VirtualMemory => 1,
            OfferPath::Legacy => 2,
        };
        let handle = match self.handle {
            HandleKind::PosixFd => 0,
            HandleKind::Fabric => 1,
        };
        let flags = u8::from(self.staged) | (u8::from(self.fabric.is_some()) << 1);
        out.extend_from_slice(&[VERSION, path, handle, flags]);
        out.extend_from_slice(&self.device.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for word in [self.offset, self.len, self.span] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(&self.uuid);
        out.extend_from_slice(&self.data);
        if let Some(fabric) = &self.fabric {
            out.extend_from_slice(&fabric.0);
        }
        out
    }

    /// The offer in `bytes`, checked for shape and self-consistency (not the driver data).
    pub fn decode(bytes: &[u8]) -> Result<Offer, ShareError> {
        let malformed = |why| Err(ShareError::Malformed(why));
        if bytes.len() < OFFER_LEN || bytes[..4] != MAGIC {
            return malformed("not a peerpool offer");
        }
        if bytes[4] != VERSION {
            return malformed("unknown offer version");
        }
        let path = match bytes[5] {
            0 => OfferPath::Pool,
            1 => OfferPath::VirtualMemory,
            2 => OfferPath::Legacy,
            _ => return malformed("unknown sharing path"),
        };
        let handle = match bytes[6] {
            0 => HandleKind::PosixFd,
            1 => HandleKind::Fabric,
            _ => return malformed("unknown handle type"),
        };
        let (flags, has_fabric) = (bytes[7], bytes[7] & 2 != 0);
        if flags & !3 != 0 || bytes.len() != OFFER_LEN + if has_fabric { 64 } else { 0 } {
            return malformed("length or flags do not match");
        }
        if bytes[12..16] != [0; 4] {
            return malformed("reserved bytes are not zero");
        }
        if has_fabric != (handle == HandleKind::Fabric && path != OfferPath::Legacy) {
            return malformed("a fabric handle belongs to fabric pool and allocation offers only");
        }
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&bytes[40..FIXED]);
        let mut data = [0u8; 64];
        data.copy_from_slice(&bytes[FIXED..OFFER_LEN]);
        let fabric = has_fabric.then(|| {
            let mut handle = [0u8; 64];
            handle.copy_from_slice(&bytes[OFFER_LEN..]);
            FabricHandle(handle)
        });
        let offer = Offer {
            path,
            handle,
            staged: flags & 1 != 0,
            device: u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
            offset: word(16),
            len: word(24),
            span: word(32),
            uuid,
            data,
            fabric,
        };
        if offer.len == 0 || offer.offset.checked_add(offer.len).is_none_or(|end| end > offer.span) {
            return malformed("the shared range lies outside what the handle maps");
        }
        Ok(offer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer() -> Offer {
        Offer {
            path: OfferPath::Pool,
            handle: HandleKind::PosixFd,
            staged: true,
            device: 1,
            offset: 0,
            len: 4096,
            span: 4096,
            uuid: [5; 16],
            data: [7; 64],
            fabric: None,
        }
    }

    #[test]
    fn round_trips() {
        let plain = offer();
        assert_eq!(Offer::decode(&plain.encode()).unwrap(), plain);
        let fabric = Offer { handle: HandleKind::Fabric, fabric: Some(FabricHandle([9; 64])), ..offer() };
        assert_eq!((plain.encode().len(), fabric.encode().len()), (120, 184));
        assert_eq!(Offer::decode(&fabric.encode()).unwrap(), fabric);
        assert_eq!((plain.fd_count(), fabric.fd_count()), (1, 0));
    }

    #[test]
    fn refuses_what_no_exporter_sends() {
        let good = offer().encode();
        let bad = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut bytes = good.clone();
            edit(&mut bytes);
            matches!(Offer::decode(&bytes), Err(ShareError::Malformed(_)))
        };
        assert!(bad(&|b| b.truncate(10)));
        assert!(bad(&|b| b[0] = b'X'));
        assert!(bad(&|b| b[4] = 1), "version 1 had no UUID");
        assert!(bad(&|b| b[5] = 9));
        assert!(bad(&|b| b[7] = 0x80));
        assert!(bad(&|b| b[7] |= 2), "fabric flag without the handle");
        assert!(bad(&|b| b[24..32].copy_from_slice(&8192u64.to_le_bytes())), "len beyond span");
        assert!(bad(&|b| b[24..32].copy_from_slice(&0u64.to_le_bytes())), "empty");
        assert!(bad(&|b| b.push(0)));
        assert!(bad(&|b| b[13] = 1), "reserved bytes set");
    }
}
