//! Arithmetic on 16-bit floats: `f16` and `bf16`, one in a register or two packed in 32 bits
//! (`f16x2`, the first in the low half), each half computed on its own. Every result is exact,
//! then rounded once by the soft-float core (`round.rs`); a NaN result is the GPU's canonical
//! one (every bit but the sign), as for f32.

use super::float::{integral, ordered};
use super::round::{self, Format};
use crate::ir::{BinOp, Cmp, FloatMode, Round, Ty, UnOp};

/// The format of `ty`'s halves and how many it packs.
fn lanes(ty: Ty) -> (Format, u32) {
    match ty {
        Ty::F16 => (Format::Half, 1),
        Ty::F16x2 => (Format::Half, 2),
        Ty::BF16 => (Format::Brain, 1),
        Ty::BF16x2 => (Format::Brain, 2),
        _ => unreachable!("decode gives only halves here, not {ty:?}"),
    }
}

/// `f` of each half of the operands (the low halves together, then the high), packed as the
/// halves of `ty` are.
fn each<const N: usize>(ty: Ty, operands: [u64; N], f: impl Fn(Format, [u64; N]) -> u64) -> u64 {
    let (format, n) = lanes(ty);
    (0..n).fold(0, |packed, i| {
        let s = 16 * i;
        packed | (f(format, operands.map(|v| (v >> s) & 0xffff)) & 0xffff) << s
    })
}

/// The exponent field and the fraction of a format's 16 bits.
fn fields(f: Format) -> (u64, u64) {
    match f {
        Format::Half => (0x7c00, 0x03ff),
        _ => (0x7f80, 0x007f),
    }
}

fn is_nan(bits: u64, f: Format) -> bool {
    let (exp, frac) = fields(f);
    bits & exp == exp && bits & frac != 0
}

/// A subnormal flushed to a zero of its sign when `ftz`.
fn flush(bits: u64, f: Format, ftz: bool) -> u64 {
    let (exp, frac) = fields(f);
    if ftz && bits & exp == 0 && bits & frac != 0 { bits & 0x8000 } else { bits }
}

/// The value of one half, exactly.
fn of(bits: u64, f: Format) -> f64 {
    f64::from_bits(round::convert(bits, f, Format::Double, Round::Nearest))
}

/// The value of a scalar half type's bits (flushed when `ftz`), exactly: for `cvt` and `setp`.
pub(crate) fn value(ty: Ty, bits: u64, ftz: bool) -> f64 {
    let (f, _) = lanes(ty);
    of(flush(bits & 0xffff, f, ftz), f)
}

/// 1.0 in a 16-bit format.
fn one(f: Format) -> u64 {
    match f {
        Format::Half => 0x3c00,
        _ => 0x3f80,
    }
}

/// A value rounded to nearest into the format.
fn near(x: f64, f: Format) -> u64 {
    round::convert(x.to_bits(), Format::Double, f, Round::Nearest)
}

/// A result: NaN made canonical, flushed under `.ftz`, clamped to [0, 1] under `.sat`.
fn finish(r: u64, f: Format, fm: FloatMode) -> u64 {
    match () {
        _ if is_nan(r, f) => {
            if fm.sat {
                0
            } else {
                round::nan(f)
            }
        }
        _ if fm.sat && r & 0x8000 != 0 => 0,
        _ if fm.sat && of(r, f) >= 1.0 => one(f),
        _ => flush(r, f, fm.ftz),
    }
}

pub(crate) fn binary(op: BinOp, ty: Ty, fm: FloatMode, a: u64, b: u64) -> u64 {
    each(ty, [a, b], |f, [a, b]| {
        let (a, b) = (flush(a, f, fm.ftz), flush(b, f, fm.ftz));
        let r = match op {
            BinOp::Add => round::add(a, b, f, fm.round),
            BinOp::Sub => round::add(a, b ^ 0x8000, f, fm.round),
            BinOp::MulLo => round::mul(a, b, f, fm.round),
            BinOp::Min | BinOp::Max | BinOp::MinNaN | BinOp::MaxNaN => {
                let (x, y) = (of(a, f), of(b, f));
                let min = matches!(op, BinOp::Min | BinOp::MinNaN);
                let pick_a = match (x.is_nan(), y.is_nan()) {
                    _ if (x.is_nan() || y.is_nan()) && matches!(op, BinOp::MinNaN | BinOp::MaxNaN) => {
                        return round::nan(f);
                    }
                    (true, true) => return round::nan(f),
                    (true, false) => false,
                    (false, true) => true,
                    // -0 is below +0.
                    _ if x == y => min == (a & 0x8000 != 0),
                    _ => min == (x < y),
                };
                return flush(if pick_a { a } else { b }, f, fm.ftz);
            }
            _ => unreachable!("decode refuses {op:?} on halves"),
        };
        finish(r, f, fm)
    })
}

/// `.relu`: each half that is negative (not NaN) made +0.
pub(crate) fn relu(ty: Ty, v: u64) -> u64 {
    each(ty, [v], |f, [h]| if h & 0x8000 != 0 && !is_nan(h, f) { 0 } else { h })
}

pub(crate) fn fma(ty: Ty, fm: FloatMode, a: u64, b: u64, c: u64) -> u64 {
    each(ty, [a, b, c], |f, v| {
        let [a, b, c] = v.map(|v| flush(v, f, fm.ftz));
        finish(round::fma(a, b, c, f, fm.round), f, fm)
    })
}

pub(crate) fn unary(op: UnOp, ty: Ty, fm: FloatMode, a: u64) -> u64 {
    each(ty, [a], |f, [a]| {
        let a = flush(a, f, fm.ftz);
        match op {
            // A NaN's `neg` and `abs` are the canonical NaN, as on an H200.
            UnOp::Neg | UnOp::Abs if is_nan(a, f) => round::nan(f),
            UnOp::Neg => a ^ 0x8000,
            UnOp::Abs => a & 0x7fff,
            // Approximations: computed in f64 and rounded once.
            UnOp::Ex2 => finish(near(of(a, f).exp2(), f), f, fm),
            UnOp::Tanh => finish(near(of(a, f).tanh(), f), f, fm),
            _ => unreachable!("decode refuses {op:?} on halves"),
        }
    })
}

/// `setp`'s comparison of each half: the low halves' result, and the high halves' (false for
/// one half).
pub(crate) fn compare(cmp: Cmp, ty: Ty, ftz: bool, a: u64, b: u64) -> [bool; 2] {
    let r = each(ty, [a, b], |f, [a, b]| ordered(cmp, of(flush(a, f, ftz), f), of(flush(b, f, ftz), f)) as u64);
    [r & 1 != 0, (r >> 16) & 1 != 0]
}

/// `set`'s: 1.0 in `to`'s format where the comparison of a half holds, else 0.0; into an
/// integer, all ones (of two halves, in the half that holds).
pub(crate) fn set(cmp: Cmp, ty: Ty, to: Ty, ftz: bool, a: u64, b: u64) -> u64 {
    let [low, high] = compare(cmp, ty, ftz, a, b);
    let one = match to {
        _ if to.half() => one(lanes(to).0),
        _ if lanes(ty).1 == 2 => 0xffff,
        _ => 0xffff_ffff,
    };
    (low as u64 * one) | (high as u64 * one) << 16
}

/// `cvt` to or from a half (not `x2`): widening is exact, narrowing rounds in `fm.round`, and
/// `round_int` rounds to an integral value first.
pub(crate) fn convert(to: Ty, from: Ty, round_int: Option<Round>, fm: FloatMode, a: u64) -> u64 {
    let format = |ty: Ty| match ty {
        Ty::F32 => Format::Single,
        Ty::F64 => Format::Double,
        ty => lanes(ty).0,
    };
    let (to_f, from_f) = (format(to), format(from));
    let a = match from {
        Ty::F64 => a,
        Ty::F32 => super::float::flush(a, false, fm.ftz),
        _ => flush(a & 0xffff, from_f, fm.ftz),
    };
    let nan = match from_f {
        Format::Single => f32::from_bits(a as u32).is_nan(),
        Format::Double => f64::from_bits(a).is_nan(),
        f => is_nan(a, f),
    };
    if let Some(r) = (nan && round_int.is_none() && !fm.sat).then(|| nan_across(a, from_f, to_f)).flatten() {
        return r;
    }
    let r = match round_int {
        Some(r) => {
            let x = f64::from_bits(round::convert(a, from_f, Format::Double, Round::Nearest));
            round::convert(integral(x, r).to_bits(), Format::Double, to_f, Round::Nearest)
        }
        None => round::convert(a, from_f, to_f, fm.round),
    };
    match to {
        Ty::F32 | Ty::F64 => super::float::finish(r, to == Ty::F64, fm, &[]),
        _ => finish(r, to_f, fm),
    }
}

/// A NaN `a` of `from` converted to `to` as an H200 converts it, where it keeps the payload: an
/// f64 NaN to a half and a half's to f64 keep its sign and the top of its payload, made quiet; a
/// bf16 NaN to f32 is its bits in the high half, as they are. `None` for the others, which are
/// the canonical NaN (a half's to f32, an f32's to a half).
fn nan_across(a: u64, from: Format, to: Format) -> Option<u64> {
    // A format's bits: sign, fraction (its top bit the quiet one) and the fraction's width.
    let shape = |f: Format| match f {
        Format::Half => (15, 10),
        Format::Double => (63, 52),
        _ => (15, 7),
    };
    match (from, to) {
        (Format::Double, Format::Half | Format::Brain) | (Format::Half | Format::Brain, Format::Double) => {
            let ((fs, fw), (ts, tw)) = (shape(from), shape(to));
            let fraction = a & ((1 << fw) - 1);
            let fraction = if fw > tw { fraction >> (fw - tw) } else { fraction << (tw - fw) };
            let exponent = ((1u64 << (ts - tw)) - 1) << tw;
            Some((a >> fs & 1) << ts | exponent | 1 << (tw - 1) | fraction)
        }
        (Format::Brain, Format::Single) => Some(a << 16),
        _ => None,
    }
}

/// An integer to a half, rounded in `fm.round`.
pub(crate) fn from_int(v: i128, to: Ty, fm: FloatMode) -> u64 {
    let (f, _) = lanes(to);
    finish(round::from_int(v, f, fm.round), f, fm)
}

/// `cvt.rn.f16x2.f32 d, a, b`: `a` and `b` (f32) as halves, `a`'s in the high half.
pub(crate) fn convert_pair(to: Ty, fm: FloatMode, a: u64, b: u64) -> u64 {
    let (f, _) = lanes(to);
    let one = |v: u64| finish(round::convert(v, Format::Single, f, fm.round), f, fm);
    one(a) << 16 | one(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: u64 = 0x3c00;
    const BF_ONE: u64 = 0x3f80;

    fn fm(round: Round) -> FloatMode {
        FloatMode { round, ..FloatMode::default() }
    }

    #[test]
    fn halves_round_once_in_every_mode() {
        // 1 + 2^-11 is halfway between 1 and its successor: to even, and as the mode says.
        let tiny = 0x1000; // 2^-11
        assert_eq!(binary(BinOp::Add, Ty::F16, fm(Round::Nearest), ONE, tiny), ONE);
        assert_eq!(binary(BinOp::Add, Ty::F16, fm(Round::Up), ONE, tiny), ONE + 1);
        assert_eq!(binary(BinOp::Add, Ty::F16, fm(Round::Down), ONE, tiny), ONE);
        // 65504 + 16 overflows to infinity to nearest, stays at the largest toward zero.
        assert_eq!(binary(BinOp::Add, Ty::F16, fm(Round::Nearest), 0x7bff, 0x4c00), 0x7c00);
        assert_eq!(binary(BinOp::Add, Ty::F16, fm(Round::Zero), 0x7bff, 0x4c00), 0x7bff);
        // bf16: 1 * 1.0078125 (one ulp up) is exact.
        assert_eq!(binary(BinOp::MulLo, Ty::BF16, fm(Round::Nearest), BF_ONE, BF_ONE + 1), BF_ONE + 1);
        // Packed: each half on its own, the first in the low half.
        let two = 0x4000;
        assert_eq!(
            binary(BinOp::Add, Ty::F16x2, fm(Round::Nearest), ONE | two << 16, ONE | ONE << 16),
            two | 0x4200 << 16
        );
    }

    #[test]
    fn nans_subnormals_and_saturation() {
        let nan = 0x7e01;
        assert_eq!(binary(BinOp::Add, Ty::F16, fm(Round::Nearest), nan, ONE), 0x7fff);
        assert_eq!(binary(BinOp::Max, Ty::F16, fm(Round::Nearest), nan, ONE), ONE);
        assert_eq!(binary(BinOp::MaxNaN, Ty::F16, fm(Round::Nearest), nan, ONE), 0x7fff);
        assert_eq!(binary(BinOp::Min, Ty::F16, fm(Round::Nearest), 0x8000, 0), 0x8000);
        let sub = 0x0001; // 2^-24
        assert_eq!(binary(BinOp::Add, Ty::F16, fm(Round::Nearest), sub, sub), 2);
        let ftz = FloatMode { ftz: true, ..fm(Round::Nearest) };
        assert_eq!(binary(BinOp::Add, Ty::F16, ftz, sub, sub), 0);
        let sat = FloatMode { sat: true, ..fm(Round::Nearest) };
        assert_eq!(binary(BinOp::Add, Ty::F16, sat, ONE, ONE), ONE);
        assert_eq!(binary(BinOp::Sub, Ty::F16, sat, 0, ONE), 0);
        assert_eq!(fma(Ty::F16, sat, nan, ONE, ONE), 0);
    }

    #[test]
    fn fma_is_rounded_once() {
        // (1 + 2^-6)^2 - 1 = 2^-5 + 2^-12: exact only when fused.
        let x = ONE + 16;
        let r = fma(Ty::F16, fm(Round::Nearest), x, x, 0xbc00);
        assert_eq!(of(r, Format::Half), 2f64.powi(-5) + 2f64.powi(-12));
    }

    #[test]
    fn comparisons_and_conversions() {
        assert_eq!(compare(Cmp::Lt, Ty::F16x2, false, ONE << 16, ONE), [true, false], "0 < 1, 1 < 0");
        assert_eq!(set(Cmp::Eq, Ty::F16, Ty::F16, false, ONE, ONE), ONE);
        assert_eq!(set(Cmp::Nan, Ty::BF16x2, Ty::BF16x2, false, 0x7fc0, 0), BF_ONE);
        assert_eq!(set(Cmp::Lt, Ty::F16x2, Ty::U32, false, 0, ONE | ONE << 16), 0xffff_ffff);
        assert_eq!(set(Cmp::Lt, Ty::F16x2, Ty::U32, false, ONE, ONE | ONE << 16), 0xffff_0000);
        assert_eq!(set(Cmp::Lt, Ty::F16, Ty::U32, false, 0, ONE), 0xffff_ffff);
        let third = (1f32 / 3.0).to_bits() as u64;
        assert_eq!(convert(Ty::F16, Ty::F32, None, fm(Round::Nearest), third), 0x3555);
        assert_eq!(convert(Ty::F16, Ty::F32, None, fm(Round::Up), third), 0x3556);
        assert_eq!(convert(Ty::F32, Ty::F16, None, fm(Round::Nearest), 0x3555), 0x3eaa_a000, "f16's 1/3");
        assert_eq!(convert(Ty::BF16, Ty::F32, None, fm(Round::Zero), third), 0x3eaa);
        assert_eq!(convert(Ty::F16, Ty::F16, Some(Round::Nearest), fm(Round::Nearest), 0x3e00), 0x4000, "1.5 to 2");
        assert_eq!(from_int(65520, Ty::F16, fm(Round::Nearest)), 0x7c00);
        assert_eq!(
            convert_pair(Ty::F16x2, fm(Round::Nearest), 1f32.to_bits() as u64, 2f32.to_bits() as u64),
            ONE << 16 | 0x4000
        );
    }
}
