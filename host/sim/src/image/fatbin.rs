//! Fatbins: NVIDIA's container of cubins and PTX for several architectures, each entry
//! optionally compressed; and the wrapper (`__fatBinC_Wrapper_t`) that points at one.
//!
//! The layout relied on, as read from what nvcc 13.0 (`nvcc -fatbin`, every
//! `-Xfatbin=-compress-mode`) writes, all fields little-endian:
//!
//! ```text
//! header, 16 bytes:  u32 magic 0xBA55ED50 | u16 version (1) | u16 header size (16)
//!                    | u64 bytes of entries that follow the header
//! entry header:      @0  u16 kind (1 PTX, 2 ELF)    @2  u16 version (0x0101)
//!                    @4  u32 header size (64; 80 for PTX, whose last 16 bytes hold options)
//!                    @8  u64 payload bytes (padded; the next entry follows them)
//!                    @16 u32 compressed bytes (0 when not compressed)
//!                    @28 u32 architecture (90 for sm_90 and compute_90)
//!                    @40 u64 flags: 0x1 64-bit, 0x10 Linux, 0x2000 LZ4, 0x8000 Zstandard,
//!                        0x100000 architecture-specific (sm_90a), 0x200000 family-specific
//!                        (sm_100f)
//!                    @56 u64 bytes once decompressed (0 when not compressed)
//! payload:           the cubin, or the PTX text NUL-padded; compressed, a raw LZ4 block
//!                    (`-compress-mode=speed`) or a Zstandard frame (the default, `size`,
//!                    `balance`), then padding
//! ```
//!
//! nvcc compresses the PTX by default and every entry with `-compress-all`. The wrapper is
//! `{ i32 magic 0x466243B1, i32 version, const void *fatbin, const void *names }`.

use super::bytes::{u16_at, u32_at, u64_at};
use super::choose::{Arch, Offer, Variant};
use super::{Claim, Refusal};
use std::borrow::Cow;

pub const MAGIC: u32 = 0xBA55_ED50;
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;

const HEADER_BYTES: u64 = 16;
const ENTRY_HEADER_BYTES: u64 = 64;
const KIND_PTX: u64 = 1;
const KIND_ELF: u64 = 2;
const LZ4: u64 = 0x2000;
const ZSTD: u64 = 0x8000;
const ARCH_SPECIFIC: u64 = 0x10_0000;
const FAMILY_SPECIFIC: u64 = 0x20_0000;
/// The most an entry may expand to (a compressed cubin of this size would be a lie).
const MAX_EXPANDED: u64 = 1 << 30;

/// A fatbin's claim: its header and the entries the header counts.
pub(super) fn claim(prefix: &[u8]) -> Claim {
    match (u16_at(prefix, 6), u64_at(prefix, 8)) {
        (Some(header), Some(entries)) => Claim::Bytes(header.max(HEADER_BYTES).saturating_add(entries)),
        _ => Claim::Bytes(HEADER_BYTES),
    }
}

/// A wrapper's claim: the fatbin it points at.
pub(super) fn wrapper_claim(prefix: &[u8]) -> Claim {
    match u64_at(prefix, 8) {
        Some(fatbin) => Claim::Wrapper(fatbin),
        None => Claim::Bytes(HEADER_BYTES),
    }
}

/// One entry of a fatbin.
#[derive(Debug)]
pub struct Entry<'a> {
    /// PTX or a cubin.
    pub ptx: bool,
    /// The architecture, as `major * 10 + minor`.
    pub arch: u64,
    payload: &'a [u8],
    flags: u64,
    compressed: u64,
    expanded: u64,
}

impl<'a> Entry<'a> {
    /// What the entry offers: machine code or PTX, for which target.
    pub fn offer(&self) -> Offer {
        let arch = i32::try_from(self.arch).unwrap_or(i32::MAX);
        let variant = match self.flags {
            f if f & ARCH_SPECIFIC != 0 => Variant::Arch,
            f if f & FAMILY_SPECIFIC != 0 => Variant::Family,
            _ => Variant::Plain,
        };
        Offer { ptx: self.ptx, arch: Arch { cc: (arch / 10, arch % 10), variant } }
    }

    /// The entry's image, decompressed.
    pub fn bytes(&self) -> Result<Cow<'a, [u8]>, Refusal> {
        let broken = Refusal::NotAnImage("a fatbin entry that does not decompress");
        if self.flags & (LZ4 | ZSTD) == 0 {
            return Ok(Cow::Borrowed(self.payload));
        }
        let input = usize::try_from(self.compressed).ok().and_then(|n| self.payload.get(..n)).ok_or(broken.clone())?;
        // Neither format expands data more than a thousandfold in practice; a larger claim is
        // refused before anything is allocated for it.
        let limit = (input.len() as u64).saturating_mul(1024).min(MAX_EXPANDED);
        if self.expanded > limit {
            return Err(broken);
        }
        let expanded = self.expanded as usize;
        let out = match self.flags & ZSTD != 0 {
            true => zstd::bulk::decompress(input, expanded).map_err(|_| broken.clone())?,
            false => lz4_flex::block::decompress(input, expanded).map_err(|_| broken.clone())?,
        };
        match out.len() == expanded {
            true => Ok(Cow::Owned(out)),
            false => Err(broken),
        }
    }
}

/// The entries of the fatbin `b`, each lying within it.
pub fn entries(b: &[u8]) -> Result<Vec<Entry<'_>>, Refusal> {
    let broken = || Refusal::NotAnImage("a fatbin whose entries reach past their container");
    if u32_at(b, 0) != Some(MAGIC as u64) {
        return Err(Refusal::NotAnImage("not a fatbin"));
    }
    let (header, size) = (u16_at(b, 6).ok_or_else(broken)?, u64_at(b, 8).ok_or_else(broken)?);
    let body = super::bytes::slice(b, header.max(HEADER_BYTES), size).ok_or_else(broken)?;
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let field = |v: Option<u64>| v.ok_or_else(broken);
        let (kind, header, padded) = (field(u16_at(rest, 0))?, field(u32_at(rest, 4))?, field(u64_at(rest, 8))?);
        if header < ENTRY_HEADER_BYTES {
            return Err(broken());
        }
        let payload = super::bytes::slice(rest, header, padded).ok_or_else(broken)?;
        out.push(Entry {
            ptx: kind == KIND_PTX,
            arch: field(u32_at(rest, 28))?,
            payload,
            flags: field(u64_at(rest, 40))?,
            compressed: field(u32_at(rest, 16))?,
            expanded: field(u64_at(rest, 56))?,
        });
        if kind != KIND_PTX && kind != KIND_ELF {
            out.pop(); // a kind this reader does not know is passed over
        }
        rest = &rest[(header + padded) as usize..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fatbin of `entries`: (kind, arch, flags, stored bytes, bytes once expanded).
    fn fatbin(entries: &[(u16, u32, u64, &[u8], usize)]) -> Vec<u8> {
        let mut body = Vec::new();
        for &(kind, arch, flags, stored, expanded) in entries {
            let padded = stored.len().next_multiple_of(8);
            let mut h = vec![0u8; 64];
            h[0..2].copy_from_slice(&kind.to_le_bytes());
            h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
            h[4..8].copy_from_slice(&64u32.to_le_bytes());
            h[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
            let compressed = flags & (LZ4 | ZSTD) != 0;
            h[16..20].copy_from_slice(&(if compressed { stored.len() as u32 } else { 0 }).to_le_bytes());
            h[28..32].copy_from_slice(&arch.to_le_bytes());
            h[40..48].copy_from_slice(&(0x11 | flags).to_le_bytes());
            h[56..64].copy_from_slice(&(if compressed { expanded as u64 } else { 0 }).to_le_bytes());
            body.extend(h);
            body.extend(stored);
            body.resize(body.len() + padded - stored.len(), 0);
        }
        let mut out = MAGIC.to_le_bytes().to_vec();
        out.extend(1u16.to_le_bytes());
        out.extend(16u16.to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
        out
    }

    const PTX80: &[u8] = b".version 8.0\n.target sm_80\n";
    const PTX90: &[u8] = b".version 9.0\n.target sm_90\n";

    #[test]
    fn entries_offer_their_target_as_their_header_says() {
        let cubin = b"\x7fELF-not-read-here";
        let (a, f) = (ARCH_SPECIFIC, FAMILY_SPECIFIC);
        let b = fatbin(&[(1, 80, 0, PTX80, 0), (2, 90, a, cubin, 0), (1, 100, f, PTX90, 0)]);
        let offers: Vec<String> = entries(&b).unwrap().iter().map(|e| super::super::describe(e.offer())).collect();
        assert_eq!(offers, ["compute_80 PTX", "sm_90a machine code", "compute_100f PTX"]);
        assert_eq!(&entries(&b).unwrap()[1].bytes().unwrap()[..cubin.len()], cubin);
        assert!(entries(&fatbin(&[])).unwrap().is_empty());
    }

    #[test]
    fn entries_compressed_with_lz4_or_zstandard_expand() {
        let text = PTX90.repeat(20);
        let lz4 = lz4_flex::block::compress(&text);
        let zstd = zstd::bulk::compress(&text, 19).unwrap();
        for (flag, stored) in [(LZ4, &lz4), (ZSTD, &zstd)] {
            let b = fatbin(&[(1, 90, flag, stored, text.len())]);
            assert_eq!(entries(&b).unwrap()[0].bytes().unwrap(), &text[..], "flag {flag:#x}");
            // Cut short: the stream ends before the bytes it promised; the driver's choice of
            // it is then no code for the device, as on an H200.
            let mut damaged = b.clone();
            damaged[16 + 16..16 + 20].copy_from_slice(&(stored.len() as u32 / 2).to_le_bytes());
            assert!(entries(&damaged).unwrap()[0].bytes().is_err(), "flag {flag:#x}");
            let read = super::super::read(&damaged, (9, 0), super::super::ptx::NEWEST_ISA);
            assert_eq!(read.unwrap_err(), Refusal::NoBinaryForGpu, "flag {flag:#x}");
        }
    }

    #[test]
    fn claims_beyond_the_bytes_are_refused() {
        let b = fatbin(&[(1, 90, 0, PTX90, 0)]);
        assert_eq!(claim(&b), Claim::Bytes(b.len() as u64));
        assert!(entries(&b[..b.len() - 1]).is_err());
        let mut lying = b.clone();
        lying[16 + 8] = 0xff; // an entry's payload far longer than the container
        assert!(entries(&lying).is_err());
        let bomb = fatbin(&[(1, 90, ZSTD, b"\x28\xb5\x2f\xfd", 1 << 40)]);
        assert!(entries(&bomb).unwrap()[0].bytes().is_err(), "refused before allocating");
        let mut wrapper = WRAPPER_MAGIC.to_le_bytes().to_vec();
        wrapper.extend(1u32.to_le_bytes());
        wrapper.extend(0x1234u64.to_le_bytes());
        assert_eq!(super::super::claim(&wrapper), Claim::Wrapper(0x1234));
    }

    proptest::proptest! {
        #[test]
        fn damaged_fatbins_are_read_or_refused_without_a_panic(
            flag in proptest::sample::select(vec![0, LZ4, ZSTD]),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            flip in proptest::prelude::any::<u8>(),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let text = PTX90.repeat(8);
            let stored = match flag {
                LZ4 => lz4_flex::block::compress(&text),
                ZSTD => zstd::bulk::compress(&text, 3).unwrap(),
                _ => text.clone(),
            };
            let mut b = fatbin(&[(2, 90, flag, &stored, text.len()), (1, 90, flag, &stored, text.len())]);
            let i = at.index(b.len());
            b[i] ^= flip;
            b.truncate(cut.index(b.len() + 1));
            let _ = super::super::claim(&b);
            let _ = super::super::read(&b, (9, 0), super::super::ptx::NEWEST_ISA);
        }
    }
}
