//! Bit fields, byte permutes, funnel shifts, three-input logic and byte dot products, as the
//! PTX ISA defines them.

use super::width::mask;
use crate::ir::{PairOp, PrmtMode, Ty, Video, VideoOp, VideoThen};

/// The field `len` bits from `pos` names in a value of `width` bits: how many of its bits lie
/// inside the value.
fn field(width: u64, pos: u64, len: u64) -> u64 {
    if pos >= width { 0 } else { len.min(width - pos) }
}

/// The low `n` bits set.
fn low(n: u64) -> u64 {
    if n >= 64 { u64::MAX } else { (1 << n) - 1 }
}

/// `pos` and `len` of a bit field as the GPU takes them: their low 8 bits for a 32-bit value,
/// but all 32 for a 64-bit one (as an H200 runs `bfe` and `bfi` on 64 bits).
fn field_bounds(ty: Ty, pos: u64, len: u64) -> (u64, u64) {
    let m = if ty.bits() == 64 { 0xffff_ffff } else { 0xff };
    (pos & m, len & m)
}

/// `bfe`: `len` bits of `a` from `pos`, padded with the field's sign bit.
pub(crate) fn bfe(ty: Ty, a: u64, pos: u64, len: u64) -> u64 {
    let width = ty.bits() as u64;
    let (pos, len) = field_bounds(ty, pos, len);
    let sbit = ty.signed() && len != 0 && (a >> (pos + len - 1).min(width - 1)) & 1 != 0;
    let n = field(width, pos, len);
    let bits = if n == 0 { 0 } else { (a >> pos) & low(n) };
    if sbit { bits | (low(width) & !low(n)) } else { bits }
}

/// `bfi`: `b` with `len` low bits of `a` written at `pos`.
pub(crate) fn bfi(ty: Ty, a: u64, b: u64, pos: u64, len: u64) -> u64 {
    let (pos, len) = field_bounds(ty, pos, len);
    let n = field(ty.bits() as u64, pos, len);
    if n == 0 {
        return mask(ty, b);
    }
    let m = low(n) << pos;
    (mask(ty, b) & !m) | ((a << pos) & m)
}

/// `prmt` in its generic form: each nibble of `c` picks one of the eight bytes of `b:a`, or
/// (its top bit set) that byte's sign spread over the byte.
pub(crate) fn prmt(a: u64, b: u64, c: u64) -> u64 {
    let source = (b & 0xffff_ffff) << 32 | (a & 0xffff_ffff);
    (0..4).fold(0, |d, i| {
        let sel = (c >> (4 * i)) & 0xf;
        let byte = (source >> (8 * (sel & 7))) & 0xff;
        let byte = if sel & 8 != 0 { if byte & 0x80 != 0 { 0xff } else { 0 } } else { byte };
        d | byte << (8 * i)
    })
}

/// `prmt` in a mode: the source bytes of `b:a` each byte of the result takes, lowest first,
/// for `c`'s low two bits (`rc16`: its lowest).
pub(crate) fn prmt_mode(mode: PrmtMode, a: u64, b: u64, c: u64) -> u64 {
    let s = (c & 3) as usize;
    let picks: [usize; 4] = match mode {
        PrmtMode::F4e => [s, s + 1, s + 2, s + 3],
        PrmtMode::B4e => [s, s + 7, s + 6, s + 5],
        PrmtMode::Rc8 => [s; 4],
        PrmtMode::Ecl => [s, s.max(1), s.max(2), 3],
        PrmtMode::Ecr => [0, s.min(1), s.min(2), s],
        PrmtMode::Rc16 => {
            let h = 2 * (s & 1);
            [h, h + 1, h, h + 1]
        }
    };
    let source = (b & 0xffff_ffff) << 32 | (a & 0xffff_ffff);
    picks.iter().enumerate().fold(0, |d, (i, &p)| d | ((source >> (8 * (p % 8))) & 0xff) << (8 * i))
}

/// `fns`: where the `offset`-th set bit of `mask` lies, counting from bit `base` (itself
/// included) up for a positive offset and down for a negative one; with offset 0, `base` if
/// its bit is set. All ones when there is none. A base past 31 (undefined) finds none.
pub(crate) fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    if base > 31 {
        return u32::MAX;
    }
    let n = offset.unsigned_abs().max(1);
    // The set bits at and beyond `base`, in the direction searched, as a mask to walk.
    let mut left = match offset {
        0 => mask & (1 << base),
        o if o > 0 => mask & (u32::MAX << base),
        _ => (mask & (u32::MAX >> (31 - base))).reverse_bits(),
    };
    if n > left.count_ones() {
        return u32::MAX;
    }
    for _ in 1..n {
        left &= left - 1;
    }
    match (left, offset < 0) {
        (0, _) => u32::MAX,
        (l, false) => l.trailing_zeros(),
        (l, true) => 31 - l.trailing_zeros(),
    }
}

/// `add`, `sub`, `min`, `max` of each 16-bit half of `a` and `b` (`.u16x2`/`.s16x2`); `relu`
/// makes a negative result half 0.
pub(crate) fn pair(op: PairOp, signed: bool, relu: bool, a: u32, b: u32) -> u32 {
    let half = |k: u32| {
        let (x, y) = ((a >> (16 * k)) as u16, (b >> (16 * k)) as u16);
        let v = match (op, signed) {
            (PairOp::Add, _) => x.wrapping_add(y),
            (PairOp::Sub, _) => x.wrapping_sub(y),
            (PairOp::Min, false) => x.min(y),
            (PairOp::Max, false) => x.max(y),
            (PairOp::Min, true) => (x as i16).min(y as i16) as u16,
            (PairOp::Max, true) => (x as i16).max(y as i16) as u16,
        };
        let v = if relu && (v as i16) < 0 { 0 } else { v };
        (v as u32) << (16 * k)
    };
    half(0) | half(1)
}

/// `bmsk`: `b` set bits from bit `a`, as the PTX ISA computes them: with `clamp`, a position
/// past 31 is no mask and a width past 31 runs to the top; else both are taken modulo 32.
pub(crate) fn bmsk(clamp: bool, a: u32, b: u32) -> u32 {
    let (a1, b1) = (a & 31, b & 31);
    let low = if clamp && a >= 32 { 0 } else { u32::MAX << a1 };
    let sum = a1 + b1;
    let high = match () {
        _ if sum >= 32 || clamp && (a >= 32 || b >= 32) => 0,
        _ if b1 == 0 => u32::MAX,
        _ => u32::MAX << sum,
    };
    low & !high
}

/// `szext`: the low `b` bits of `a`, sign-extended when `signed`, else zero-extended, as the
/// PTX ISA computes them: with `clamp`, a width past 31 keeps all of `a`; else it is taken
/// modulo 32, and a width of 0 is 0.
pub(crate) fn szext(clamp: bool, signed: bool, a: u32, b: u32) -> u32 {
    let b1 = b & 31;
    let too_large = clamp && b >= 32;
    let mask = if too_large { 0 } else { u32::MAX << b1 };
    let sign = !too_large && b1 != 0 && signed && (a >> (b1 - 1)) & 1 != 0;
    (a & !mask) | if sign { mask } else { 0 }
}

/// `lop3`: each result bit is the table's bit at `(a << 2) | (b << 1) | c` of the inputs' bits.
pub(crate) fn lop3(lut: u8, a: u64, b: u64, c: u64) -> u64 {
    (0..8).filter(|i| lut >> i & 1 != 0).fold(0, |d, i| {
        let pick = |v: u64, set: bool| if set { v } else { !v };
        d | (pick(a, i & 4 != 0) & pick(b, i & 2 != 0) & pick(c, i & 1 != 0))
    })
}

/// `shf.l`/`shf.r` of the 64 bits `b:a` by `c` (clamped to 32, or modulo 32).
pub(crate) fn shf(left: bool, clamp: bool, a: u64, b: u64, c: u64) -> u64 {
    let n = if clamp { (c & 0xffff_ffff).min(32) } else { c & 31 };
    let v = (b & 0xffff_ffff) << 32 | (a & 0xffff_ffff);
    if left { (v << n) >> 32 } else { (v >> n) & 0xffff_ffff }
}

/// `dp4a` (`two: None`): `c` plus the dot product of the four bytes of `a` and `b`;
/// `dp2a.lo`/`.hi` (`two: Some(hi)`): of the two halves of `a` and two bytes of `b`.
pub(crate) fn dp(a_signed: bool, b_signed: bool, two: Option<bool>, a: u64, b: u64, c: u64) -> u64 {
    let field = |v: u64, at: u32, bits: u32, signed: bool| {
        let x = (v >> at) & ((1 << bits) - 1);
        if signed && x >> (bits - 1) != 0 { x as i64 - (1 << bits) } else { x as i64 }
    };
    let sum: i64 = match two {
        None => (0..4).map(|i| field(a, 8 * i, 8, a_signed) * field(b, 8 * i, 8, b_signed)).sum(),
        Some(hi) => {
            let at = if hi { 16 } else { 0 };
            (0..2).map(|i| field(a, 16 * i, 16, a_signed) * field(b, at + 8 * i, 8, b_signed)).sum()
        }
    };
    (c as i64).wrapping_add(sum) as u64 & 0xffff_ffff
}

/// A SIMD video instruction with the default selectors (`a`'s elements against `b`'s, in
/// order) and mask (every element), as the PTX ISA's pseudo-code for `vop2`/`vop4` says.
pub(crate) fn video(v: Video, a: u64, b: u64, c: u64) -> u64 {
    let (bits, n) = if v.halves { (16, 2) } else { (8, 4) };
    let field = |x: u64, i: u32, signed: bool| {
        let e = (x >> (bits * i)) & ((1 << bits) - 1);
        if signed && e >> (bits - 1) != 0 { e as i64 - (1 << bits) } else { e as i64 }
    };
    let [d_signed, a_signed, b_signed] = v.signed;
    let t = |i: u32| {
        let (x, y) = (field(a, i, a_signed), field(b, i, b_signed));
        match v.op {
            VideoOp::Add => x + y,
            VideoOp::Sub => x - y,
            VideoOp::Avrg => (x + y + (x + y >= 0) as i64) >> 1,
            VideoOp::AbsDiff => (x - y).abs(),
            VideoOp::Min => x.min(y),
            VideoOp::Max => x.max(y),
        }
    };
    if v.then == VideoThen::Add {
        return (0..n).fold(c as i64, |r, i| r.wrapping_add(t(i))) as u64 & 0xffff_ffff;
    }
    let (lo, hi) = if d_signed { (-(1i64 << (bits - 1)), (1 << (bits - 1)) - 1) } else { (0, (1 << bits) - 1) };
    (0..n).fold(0, |d, i| {
        let e = if v.then == VideoThen::Saturate { t(i).clamp(lo, hi) } else { t(i) };
        d | ((e as u64) & ((1 << bits) - 1)) << (bits * i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_permutes_and_funnels() {
        assert_eq!(bfe(Ty::U32, 0xabcd_1234, 8, 8), 0x12);
        assert_eq!(bfe(Ty::S32, 0xabcd_1234, 28, 8), 0xffff_fffa, "past the msb: the sign of bit 31");
        assert_eq!(bfe(Ty::S32, 0x80, 4, 4), 0xffff_fff8);
        assert_eq!(bfe(Ty::S32, 0xff, 0, 0), 0);
        assert_eq!(bfi(Ty::B32, 0xff, 0x1234_5678, 8, 4), 0x1234_5f78);
        assert_eq!(bfi(Ty::B32, 0xff, 0x1234_5678, 30, 8), 0xd234_5678);
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x3210), 0x4433_2211);
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x7654), 0x8877_6655);
        assert_eq!(prmt(0x4433_2211, 0x8877_6655, 0x000f), 0x1111_11ff);
        assert_eq!(lop3(0xf0 & 0xcc | 0xaa, 0b1100, 0b1010, 0b0001), (0b1100 & 0b1010) | 0b0001);
        assert_eq!(shf(true, false, 0x8000_0000, 1, 1), 3);
        assert_eq!(shf(false, true, 0, 0xabcd, 40), 0xabcd);
        assert_eq!(shf(false, false, 0x10, 0x1, 36), 0x1000_0001);
        assert_eq!(dp(true, false, None, 0xff01_02fe, 0x0102_0304, 10), (10 - 8 + 6 + 2 - 1) as u64);
        assert_eq!(dp(false, false, Some(true), 0x0002_0003, 0x0504_0000, 1), 1 + 3 * 4 + 2 * 5);
    }

    /// A position or length as an H200 reads it: 8 bits for 32-bit fields, 32 for 64-bit ones.
    fn read(ty: Ty, v: u64) -> u64 {
        v & if ty.bits() == 64 { 0xffff_ffff } else { 0xff }
    }

    /// `bfe` and `bfi` bit by bit, as the PTX ISA writes them.
    fn bfe_bits(ty: Ty, a: u64, pos: u64, len: u64) -> u64 {
        let msb = ty.bits() as u64 - 1;
        let (pos, len) = (read(ty, pos), read(ty, len));
        let sbit = ty.signed() && len != 0 && (a >> (pos + len - 1).min(msb)) & 1 != 0;
        (0..=msb).fold(0, |d, i| {
            let bit = if i < len && pos + i <= msb { (a >> (pos + i)) & 1 != 0 } else { sbit };
            d | (bit as u64) << i
        })
    }

    fn bfi_bits(ty: Ty, a: u64, b: u64, pos: u64, len: u64) -> u64 {
        let msb = ty.bits() as u64 - 1;
        let (pos, len) = (read(ty, pos), read(ty, len));
        let mut f = mask(ty, b);
        for i in (0..len).take_while(|i| pos + i <= msb) {
            f = (f & !(1 << (pos + i))) | ((a >> i) & 1) << (pos + i);
        }
        f
    }

    #[test]
    fn fields_by_mask_are_fields_bit_by_bit() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let (a, b, r) = (next(), next(), next());
            // Positions and lengths around the widths, anywhere up to 255 (and past it), and
            // past 255 by a bit of the 32 (which 64-bit fields read).
            let big = |k: u64| (r >> k) % 2 * (1 << (8 + (r >> (k + 1)) % 24));
            let (pos, len) =
                (r % 72 + (r >> 8) % 2 * (r >> 16) % 300 + big(40), (r >> 24) % 72 + (r >> 32) % 2 * 256 + big(50));
            for ty in [Ty::U32, Ty::S32, Ty::U64, Ty::S64, Ty::B32, Ty::B64] {
                assert_eq!(bfe(ty, a, pos, len), bfe_bits(ty, a, pos, len), "bfe {ty:?} {a:x} {pos} {len}");
                assert_eq!(bfi(ty, a, b, pos, len), bfi_bits(ty, a, b, pos, len), "bfi {ty:?} {a:x} {b:x} {pos} {len}");
            }
        }
    }

    /// `fns` as the PTX ISA's pseudo-code walks it, bit by bit.
    fn fns_walk(mask: u32, base: u32, offset: i32) -> u32 {
        if offset == 0 {
            return if base < 32 && mask >> base & 1 == 1 { base } else { u32::MAX };
        }
        let (mut pos, mut count, inc) = (base as i64, offset.unsigned_abs() - 1, offset.signum() as i64);
        while (0..32).contains(&pos) {
            if mask >> pos & 1 == 1 {
                if count == 0 {
                    return pos as u32;
                }
                count -= 1;
            }
            pos += inc;
        }
        u32::MAX
    }

    #[test]
    fn fns_finds_what_the_walk_finds() {
        assert_eq!([fns(0xaaaa_aaaa, 3, 1), fns(0xaaaa_aaaa, 3, -1)], [3, 3]);
        assert_eq!([fns(0xaaaa_aaaa, 2, 1), fns(0xaaaa_aaaa, 2, -1)], [3, 1]);
        let mut x = 0x2545_f491u32;
        for i in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let mask = if i % 7 == 0 { x & 0x0101_0101 } else { x };
            let (base, offset) = (i % 32, (x >> 8) as i32 % 36);
            assert_eq!(fns(mask, base, offset), fns_walk(mask, base, offset), "{mask:#x} {base} {offset}");
        }
        assert_eq!(fns(u32::MAX, 31, i32::MIN), u32::MAX);
        assert_eq!(fns(u32::MAX, 0, -1), 0);
    }

    #[test]
    fn pairs_compute_each_half_on_its_own() {
        let (a, b) = (0x8001_7fffu32, 0x0002_0001u32);
        assert_eq!(pair(PairOp::Add, false, false, a, b), 0x8003_8000, "no carry between halves");
        assert_eq!(pair(PairOp::Sub, false, false, b, a), 0x8001_8002);
        assert_eq!(pair(PairOp::Min, false, false, a, b), 0x0002_0001);
        assert_eq!(pair(PairOp::Min, true, false, a, b), 0x8001_0001);
        assert_eq!(pair(PairOp::Max, true, false, a, b), 0x0002_7fff);
        assert_eq!(pair(PairOp::Min, true, true, a, b), 0x0000_0001, "a negative half is 0");
        assert_eq!(pair(PairOp::Max, true, true, 0xffff_fffe, 0x8000_fffd), 0);
    }

    #[test]
    fn video_elements_merge_saturate_or_sum() {
        let v = |op, halves, signed, then| Video { op, halves, signed, then };
        let (u, s) = ([false; 3], [true; 3]);
        let (a, b) = (0x10_f0_05_80u32 as u64, 0x20_10_07_7fu32 as u64);
        assert_eq!(video(v(VideoOp::AbsDiff, false, u, VideoThen::Merge), a, b, 0), 0x10_e0_02_01);
        // __vsadu4: the four differences summed onto c.
        assert_eq!(video(v(VideoOp::AbsDiff, false, u, VideoThen::Add), a, b, 5), 5 + 0x10 + 0xe0 + 2 + 1);
        // Signed bytes: 0xf0 is -16 and 0x80 is -128; -128 - 127 saturates to -128.
        assert_eq!(video(v(VideoOp::Sub, false, s, VideoThen::Saturate), a, b, 0), 0xf0_e0_fe_80);
        assert_eq!(video(v(VideoOp::Sub, false, s, VideoThen::Merge), a, b, 0), 0xf0_e0_fe_01, "wraps");
        assert_eq!(video(v(VideoOp::Add, false, u, VideoThen::Saturate), a, b, 0), 0x30_ff_0c_ff);
        // The mean rounds half away from zero: (-16 + 16 + 1) >> 1 = 0, (-128 + 127) >> 1 = -1.
        assert_eq!(video(v(VideoOp::Avrg, false, s, VideoThen::Merge), a, b, 0), 0x18_00_06_ff);
        assert_eq!(video(v(VideoOp::Min, true, s, VideoThen::Merge), a, b, 0), 0x10_f0_05_80);
        assert_eq!(video(v(VideoOp::Max, true, u, VideoThen::Merge), a, b, 0), 0x20_10_07_7f);
        // Unsigned halves into signed ones, saturated where past 0x7fff.
        let mixed = v(VideoOp::Add, true, [true, false, false], VideoThen::Saturate);
        assert_eq!(video(mixed, a, b, 0), 0x3100_0cff);
        assert_eq!(video(mixed, 0xf005_8000, 0x077f_8000, 0), 0x7fff_7fff);
    }
}
