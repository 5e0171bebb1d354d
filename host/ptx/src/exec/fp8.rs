//! 8-bit floats as PTX converts them (sm_89 and later; `cvt` is all PTX does with them): `e4m3`
//! (no infinities, its NaN all ones, at most 448) and `e5m2` (f16's top byte, at most 57344),
//! two in 16 bits, the first in the low byte. Into them each value is rounded to nearest once,
//! and `.satfinite` (which PTX requires) makes an overflow or an infinity the largest finite
//! value of its sign and a NaN `0x7f`; out of them, into f16, each value is exact.

use super::half;
use super::round::{self, Format};
use crate::ir::{Conversion, Round, Ty};

/// One 8-bit float from `bits` of `from` (f32 or f16), with `.relu` when `relu`.
fn narrow(bits: u64, from: Format, e4m3: bool, relu: bool) -> u64 {
    if f64::from_bits(round::convert(bits, from, Format::Double, Round::Nearest)).is_nan() {
        return 0x7f;
    }
    let (format, sign_at, max) = if e4m3 { (Format::E4m3Wide, 8, 0x7e) } else { (Format::E5m2, 7, 0x7b) };
    let r = round::convert(bits, from, format, Round::Nearest);
    let negative = r >> sign_at & 1 != 0;
    // Magnitudes order as their bits do: past the largest finite value is saturated.
    let magnitude = (r & ((1 << sign_at) - 1)).min(max);
    match () {
        _ if negative && relu => 0,
        _ if negative => 0x80 | magnitude,
        _ => magnitude,
    }
}

/// One 8-bit float as f16 bits, exactly.
fn widen(b: u64, e4m3: bool) -> u64 {
    match e4m3 {
        // A NaN of either is f16's canonical NaN, as on the GPU.
        true if b & 0x7f == 0x7f => round::nan(Format::Half),
        false if b & 0x7c == 0x7c && b & 3 != 0 => round::nan(Format::Half),
        // Into e4m3's wide format, its sign a bit higher.
        true => round::convert((b & 0x80) << 1 | (b & 0x7f), Format::E4m3Wide, Format::Half, Round::Nearest),
        false => b << 8,
    }
}

/// `cvt` between two 8-bit floats and an `f16x2`, either way.
pub(crate) fn convert(conv: Conversion, a: u64) -> u64 {
    let Conversion { to, from, relu, .. } = conv;
    let [lo, hi] = [a & 0xffff, (a >> 16) & 0xffff];
    match to {
        Ty::F16x2 => {
            let e4m3 = from == Ty::E4M3x2;
            let pair = widen(a & 0xff, e4m3) | widen((a >> 8) & 0xff, e4m3) << 16;
            if relu { half::relu(Ty::F16x2, pair) } else { pair }
        }
        _ => narrow(lo, Format::Half, to == Ty::E4M3x2, relu) | narrow(hi, Format::Half, to == Ty::E4M3x2, relu) << 8,
    }
}

/// `cvt.rn.satfinite.e4m3x2.f32 d, a, b`: `a` and `b` (f32), `a`'s in the high byte.
pub(crate) fn convert_pair(conv: Conversion, a: u64, b: u64) -> u64 {
    let e4m3 = conv.to == Ty::E4M3x2;
    narrow(a, Format::Single, e4m3, conv.relu) << 8 | narrow(b, Format::Single, e4m3, conv.relu)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f32) -> u64 {
        v.to_bits() as u64
    }

    #[test]
    fn into_and_out_of_8_bit_floats() {
        // e4m3: 1.0 is 0x38, 448 the largest, 464 (halfway to 480) rounds to even, 448.
        assert_eq!(narrow(f(1.0), Format::Single, true, false), 0x38);
        assert_eq!(narrow(f(448.0), Format::Single, true, false), 0x7e);
        assert_eq!(narrow(f(1e6), Format::Single, true, false), 0x7e, "saturated");
        assert_eq!(narrow(f(f32::NEG_INFINITY), Format::Single, true, false), 0xfe);
        assert_eq!(narrow(f(f32::NAN), Format::Single, true, false), 0x7f);
        assert_eq!(narrow(f(2f32.powi(-9)), Format::Single, true, false), 0x01, "the smallest subnormal");
        assert_eq!(narrow(f(-1.0), Format::Single, true, true), 0, ".relu");
        // e5m2: f16's top byte, saturated at 57344 (0x7b).
        assert_eq!(narrow(f(1.0), Format::Single, false, false), 0x3c);
        assert_eq!(narrow(f(1e6), Format::Single, false, false), 0x7b);
        assert_eq!(widen(0x3c, false), 0x3c00);
        assert_eq!(widen(0x7e, true), 0x5f00, "448 in f16");
        assert_eq!(widen(0x01, true), 0x1800, "2^-9 in f16");
        assert_eq!(widen(0xff, true), 0x7fff);
        assert_eq!(widen(0x7f, false), 0x7fff, "e5m2's NaN");
        assert_eq!(widen(0xfc, false), 0xfc00, "e5m2's -inf");
        let conv = |to, from| Conversion { to, from, round_int: None, fm: Default::default(), relu: false };
        assert_eq!(convert_pair(conv(Ty::E4M3x2, Ty::F32), f(1.0), f(2.0)), 0x3840);
        assert_eq!(convert(conv(Ty::F16x2, Ty::E4M3x2), 0x3840), 0x3c00_4000);
        assert_eq!(convert(conv(Ty::E5M2x2, Ty::F16x2), 0x3c00_4000), 0x3c40);
    }
}
