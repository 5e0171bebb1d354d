//! The frame around every message: a fixed header before the payload, in the same datagram.
//!
//! The header makes end of file unambiguous (a real message is never empty), names the
//! protocol version, and announces how many fds travel with the bytes, so the receiver can
//! tell fds the kernel dropped from fds that were never sent.

use super::error::IpcError;

/// `b"PP"`, protocol version 1, fd count, reserved, payload length (u32, little endian).
pub(crate) const HEADER_LEN: usize = 8;
const MAGIC: [u8; 2] = *b"PP";
const VERSION: u8 = 1;

/// The largest payload one message may carry (export data is 64 bytes; this leaves room).
pub const MAX_PAYLOAD: usize = 64 * 1024;
/// The kernel's per-message limit on `SCM_RIGHTS` (`SCM_MAX_FD`).
pub const MAX_FDS: usize = 253;

/// What a receiver accepts; anything larger is rejected and its fds closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Payload bytes (header not counted).
    pub max_bytes: usize,
    /// File descriptors.
    pub max_fds: usize,
}

impl Default for Limits {
    /// 4 KiB and 4 fds: a pool fd and its export data need one fd and 64 bytes.
    fn default() -> Self {
        Self { max_bytes: 4096, max_fds: 4 }
    }
}

impl Limits {
    /// The limits clamped to what one message can carry.
    pub(crate) fn clamped(self) -> Self {
        Self { max_bytes: self.max_bytes.min(MAX_PAYLOAD), max_fds: self.max_fds.min(MAX_FDS) }
    }
}

/// What a header announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub fds: usize,
    pub len: usize,
}

/// The header for `len` payload bytes and `fds` fds; the caller has checked both limits.
pub(crate) fn encode(len: usize, fds: usize) -> [u8; HEADER_LEN] {
    let mut header = [0; HEADER_LEN];
    header[..2].copy_from_slice(&MAGIC);
    header[2] = VERSION;
    header[3] = u8::try_from(fds).unwrap_or(u8::MAX);
    header[4..].copy_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
    header
}

/// The header at the start of `frame` (the whole received datagram).
pub(crate) fn decode(frame: &[u8]) -> Result<Header, IpcError> {
    let Some((header, payload)) = frame.split_first_chunk::<HEADER_LEN>() else {
        return Err(IpcError::Malformed("shorter than the header"));
    };
    if header[..2] != MAGIC {
        return Err(IpcError::Malformed("not a peerpool message"));
    }
    if header[2] != VERSION {
        return Err(IpcError::Malformed("unknown protocol version"));
    }
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if len != payload.len() {
        return Err(IpcError::Malformed("payload length differs from the header's"));
    }
    Ok(Header { fds: usize::from(header[3]), len })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let mut frame = encode(3, 2).to_vec();
        frame.extend_from_slice(b"abc");
        assert_eq!(decode(&frame), Ok(Header { fds: 2, len: 3 }));
    }

    #[test]
    fn bad_frames_are_malformed() {
        assert!(matches!(decode(b"PP"), Err(IpcError::Malformed(_))));
        assert!(matches!(decode(b"XX\x01\0\0\0\0\0"), Err(IpcError::Malformed(_))));
        assert!(matches!(decode(b"PP\x02\0\0\0\0\0"), Err(IpcError::Malformed(_))));
        assert!(matches!(decode(b"PP\x01\0\x05\0\0\0ab"), Err(IpcError::Malformed(_))));
    }
}
