//! The byte pattern that fills and checks probe buffers.
//!
//! This one file is compiled twice: into the `#![no_core]` kernel crate (device side) and into
//! the host library, so host and kernels agree by construction. It may therefore use only
//! operators on primitive integers and `as` casts: no methods, no `core`, nothing that could
//! overflow (the kernel build has no panic machinery, and the host build would panic in debug).

/// The 32-bit word expected at word `index` of a buffer filled with `seed`.
///
/// Neighbouring words differ (multiplicative hashing of the low half of the index), words 4 GiB
/// apart differ (the high half is folded in), and different seeds give different buffers.
#[inline(always)]
pub fn pattern(index: u64, seed: u32) -> u32 {
    // (2^32 - 1) * 0x9E37_79B1 < 2^64: the product cannot overflow a u64.
    let low = ((index & 0xFFFF_FFFF) * 0x9E37_79B1) as u32;
    let high = (index >> 32) as u32;
    low ^ high ^ seed
}
