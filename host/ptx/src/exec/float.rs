//! Float operations on register bits: IEEE results in the instruction's rounding mode (the
//! host's own arithmetic to nearest; for the directed modes, f32 through `directed.rs` or the
//! host's own instructions, `host_rounding.rs`, and `round.rs` for the rest), canonical NaNs as the
//! GPU returns them, `.ftz` on f32 inputs and results, `.sat`, and the approximate functions
//! (computed in f64 and rounded once, within 1 ulp of the exact value).

use super::directed;
use super::round::{self, Format};
use crate::ir::{BinOp, Cmp, FloatClass, FloatMode, Round, UnOp};

pub(crate) const NAN32: u64 = 0x7fff_ffff;
/// The NaN an H200 makes of f64 operands that are not NaN (`0 * inf`, `sqrt(-1)`): the sign
/// set, the quiet bit alone.
pub(crate) const NAN64: u64 = 0xfff8_0000_0000_0000;
const QUIET64: u64 = 1 << 51;

/// An f64 operation's NaN result, as an H200 gives it: its first operand that is a NaN, made
/// quiet (payload and sign kept); else [`NAN64`]. (f32 results are [`NAN32`] whatever the
/// operands.)
fn nan64(operands: &[u64]) -> u64 {
    operands.iter().find(|&&b| f64::from_bits(b).is_nan()).map_or(NAN64, |&b| b | QUIET64)
}

/// f32 subnormals flushed to a zero of the same sign when `ftz` (f64 is never flushed).
pub(crate) fn flush(bits: u64, wide: bool, ftz: bool) -> u64 {
    let subnormal = !wide && bits & 0x7f80_0000 == 0 && bits & 0x007f_ffff != 0;
    if ftz && subnormal { bits & 0x8000_0000 } else { bits }
}

fn value(bits: u64, wide: bool) -> f64 {
    if wide { f64::from_bits(bits) } else { f32::from_bits(bits as u32) as f64 }
}

fn is_nan(bits: u64, wide: bool) -> bool {
    value(bits, wide).is_nan()
}

/// `r`, an f32 result under `.ftz` whose exact value `exact` computes: flushed to a zero of its
/// sign where it rounded up to the smallest normal from below it, as an H200 flushes a result
/// that is tiny before rounding. (Elsewhere `finish` flushes what rounding left subnormal.)
fn tiny(r: u64, wide: bool, fm: FloatMode, exact: impl FnOnce() -> f64) -> u64 {
    let smallest = !wide && fm.ftz && r as u32 & 0x7fff_ffff == f32::MIN_POSITIVE.to_bits();
    if smallest && exact().abs() < f32::MIN_POSITIVE as f64 { r & 0x8000_0000 } else { r }
}

/// A result of `operands`: a NaN as the GPU gives it, flushed under `.ftz`, clamped under
/// `.sat`.
pub(crate) fn finish(bits: u64, wide: bool, fm: FloatMode, operands: &[u64]) -> u64 {
    if is_nan(bits, wide) {
        return if fm.sat {
            0
        } else if wide {
            nan64(operands)
        } else {
            NAN32
        };
    }
    let bits = flush(bits, wide, fm.ftz);
    if fm.sat {
        let v = value(bits, wide);
        let one = if wide { 1f64.to_bits() } else { 1f32.to_bits() as u64 };
        return if v <= 0.0 {
            0
        } else if v >= 1.0 {
            one
        } else {
            bits
        };
    }
    bits
}

/// A value computed in f64 (exactly, or by an approximate function) rounded to the width.
fn from_f64(v: f64, wide: bool) -> u64 {
    if wide { v.to_bits() } else { (v as f32).to_bits() as u64 }
}

fn neg(bits: u64, wide: bool) -> u64 {
    bits ^ if wide { 1 << 63 } else { 1 << 31 }
}

pub(crate) fn binary(op: BinOp, wide: bool, fm: FloatMode, a: u64, b: u64) -> u64 {
    let (a, b) = (flush(a, wide, fm.ftz), flush(b, wide, fm.ftz));
    let (x, y) = (value(a, wide), value(b, wide));
    let near = fm.round == Round::Nearest;
    let r = match op {
        // Sums and products of two f32s are exact in f64 but for far-apart sums, so f32
        // to nearest uses f32 arithmetic itself.
        BinOp::Add if near => native(wide, a, b, |x, y| x + y, |x, y| x + y),
        BinOp::Sub if near => native(wide, a, b, |x, y| x - y, |x, y| x - y),
        BinOp::MulLo if near => native(wide, a, b, |x, y| x * y, |x, y| x * y),
        BinOp::Div if near => native(wide, a, b, |x, y| x / y, |x, y| x / y),
        BinOp::Add if !wide => directed::add(a, b, fm.round),
        BinOp::Sub if !wide => directed::add(a, neg(b, wide), fm.round),
        BinOp::MulLo if !wide => directed::mul(a, b, fm.round),
        BinOp::Add => round::add(a, b, Format::of(wide), fm.round),
        BinOp::Sub => round::add(a, neg(b, wide), Format::of(wide), fm.round),
        BinOp::MulLo => round::mul(a, b, Format::of(wide), fm.round),
        BinOp::Div if !wide => directed::div(a, b, fm.round),
        BinOp::Div => round::div(a, b, Format::of(wide), fm.round),
        // min/max: a NaN operand yields the other (with .NaN, NaN); -0 is below +0.
        BinOp::Min | BinOp::Max | BinOp::MinNaN | BinOp::MaxNaN => {
            let nan = if wide { nan64(&[a, b]) } else { NAN32 };
            let min = matches!(op, BinOp::Min | BinOp::MinNaN);
            let pick_a = match (x.is_nan(), y.is_nan()) {
                _ if (x.is_nan() || y.is_nan()) && matches!(op, BinOp::MinNaN | BinOp::MaxNaN) => return nan,
                (true, true) => return nan,
                (true, false) => false,
                (false, true) => true,
                _ if x == y => min == (a & sign(wide) != 0),
                _ => min == (x < y),
            };
            return flush(if pick_a { a } else { b }, wide, fm.ftz);
        }
        BinOp::CopySign => return (b & !sign(wide)) | (a & sign(wide)),
        _ => unreachable!("decode refuses {op:?} on floats"),
    };
    // A product of f32s is exact in f64, a quotient near enough; a sum near the smallest
    // normal is exact in f32.
    let r = tiny(r, wide, fm, || match op {
        BinOp::Div => x / y,
        BinOp::MulLo => x * y,
        BinOp::Sub => x - y,
        _ => x + y,
    });
    finish(r, wide, fm, &[a, b])
}

/// The f32 operations [`directed32`] computes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Directed {
    Add,
    Sub,
    Mul,
    Div,
    Sqrt,
    Fma,
}

/// [`binary`]'s f32 `add`, `sub`, `mul`, `div`, [`unary`]'s `sqrt` (of `a`) and [`fma`]
/// (`a * b + c`) in a directed `round`, without `.ftz` or `.sat`.
pub(crate) fn directed32(op: Directed, round: Round, a: u64, b: u64, c: u64) -> u64 {
    let r = match op {
        Directed::Add => directed::add(a, b, round),
        Directed::Sub => directed::add(a, neg(b, false), round),
        Directed::Mul => directed::mul(a, b, round),
        Directed::Div => directed::div(a, b, round),
        Directed::Sqrt => directed::sqrt(a, round),
        Directed::Fma => directed::fma(a, b, c, round),
    };
    finish(r, false, FloatMode { round, ..FloatMode::default() }, &[])
}

/// The operations [`near`] computes.
#[derive(Clone, Copy)]
pub(crate) enum Near {
    Add,
    Sub,
    Mul,
    Div,
}

/// [`binary`]'s `add`, `sub`, `mul` and `div` to nearest without `.ftz` or `.sat`.
#[inline(always)]
pub(crate) fn near(wide: bool, a: u64, b: u64, op: Near) -> u64 {
    let r = match op {
        Near::Add => native(wide, a, b, |x, y| x + y, |x, y| x + y),
        Near::Sub => native(wide, a, b, |x, y| x - y, |x, y| x - y),
        Near::Mul => native(wide, a, b, |x, y| x * y, |x, y| x * y),
        Near::Div => native(wide, a, b, |x, y| x / y, |x, y| x / y),
    };
    finish(r, wide, FloatMode::default(), &[a, b])
}

/// `abs` (its sign cleared) or `neg` (flipped) of `a`. A NaN stays as it is in f64, made
/// quiet, and becomes the canonical NaN in f32, as on an H200.
#[inline(always)]
pub(crate) fn abs_neg(negate: bool, wide: bool, a: u64) -> u64 {
    match (is_nan(a, wide), wide) {
        (true, true) => a | QUIET64,
        (true, false) => NAN32,
        _ if negate => neg(a, wide),
        _ => a & !sign(wide),
    }
}

fn sign(wide: bool) -> u64 {
    if wide { 1 << 63 } else { 1 << 31 }
}

fn native(wide: bool, a: u64, b: u64, f: impl Fn(f32, f32) -> f32, g: impl Fn(f64, f64) -> f64) -> u64 {
    match wide {
        true => g(f64::from_bits(a), f64::from_bits(b)).to_bits(),
        false => f(f32::from_bits(a as u32), f32::from_bits(b as u32)).to_bits() as u64,
    }
}

pub(crate) fn fma(wide: bool, fm: FloatMode, a: u64, b: u64, c: u64) -> u64 {
    let (a, b, c) = (flush(a, wide, fm.ftz), flush(b, wide, fm.ftz), flush(c, wide, fm.ftz));
    let r = match (fm.round, wide) {
        (Round::Nearest, true) => f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c)).to_bits(),
        (Round::Nearest, false) => {
            let (x, y, z) = (f32::from_bits(a as u32), f32::from_bits(b as u32), f32::from_bits(c as u32));
            x.mul_add(y, z).to_bits() as u64
        }
        (mode, false) => directed::fma(a, b, c, mode),
        (mode, true) => round::fma(a, b, c, Format::of(wide), mode),
    };
    let r = tiny(r, wide, fm, || value(a, wide).mul_add(value(b, wide), value(c, wide)));
    finish(r, wide, fm, &[a, b, c])
}

pub(crate) fn unary(op: UnOp, wide: bool, fm: FloatMode, a: u64) -> u64 {
    let a = flush(a, wide, fm.ftz);
    let x = value(a, wide);
    let near = fm.round == Round::Nearest;
    let r = match op {
        UnOp::Neg | UnOp::Abs => return abs_neg(op == UnOp::Neg, wide, a),
        UnOp::Test(class) => return test(class, a, wide) as u64,
        UnOp::Sqrt if near => from_f64(if wide { x.sqrt() } else { (x as f32).sqrt() as f64 }, wide),
        UnOp::Sqrt if !wide => directed::sqrt(a, fm.round),
        UnOp::Sqrt => round::sqrt(a, Format::of(wide), fm.round),
        UnOp::Rcp => {
            let one = if wide { 1f64.to_bits() } else { 1f32.to_bits() as u64 };
            if near {
                native(wide, one, a, |x, y| x / y, |x, y| x / y)
            } else {
                round::div(one, a, Format::of(wide), fm.round)
            }
        }
        // Approximations: computed in f64 and rounded once.
        UnOp::Rsqrt => from_f64(1.0 / x.sqrt(), wide),
        UnOp::Sin => from_f64(x.sin(), wide),
        UnOp::Cos => from_f64(x.cos(), wide),
        UnOp::Lg2 => from_f64(x.log2(), wide),
        UnOp::Ex2 => from_f64(x.exp2(), wide),
        UnOp::Tanh => from_f64(x.tanh(), wide),
        _ => unreachable!("decode refuses {op:?} on floats"),
    };
    // A reciprocal may round up to the smallest normal; a square root of a normal cannot.
    let r = if op == UnOp::Rcp { tiny(r, wide, fm, || 1.0 / x) } else { r };
    finish(r, wide, FloatMode { sat: false, ..fm }, &[a])
}

fn test(class: FloatClass, a: u64, wide: bool) -> bool {
    let x = value(a, wide);
    match class {
        FloatClass::Finite => x.is_finite(),
        FloatClass::Infinite => x.is_infinite(),
        FloatClass::Number => !x.is_nan(),
        FloatClass::NotANumber => x.is_nan(),
        // An H200 counts zeros as normal.
        FloatClass::Normal if wide => x.is_normal() || x == 0.0,
        FloatClass::Normal => (x as f32).is_normal() || x == 0.0,
        FloatClass::Subnormal if wide => x.is_subnormal(),
        FloatClass::Subnormal => (x as f32).is_subnormal(),
    }
}

/// `cvt` between floats: widening is exact, narrowing rounds in `mode`; `round_int` rounds to
/// an integral value in the same width.
pub(crate) fn convert(
    to_wide: bool,
    from_wide: bool,
    round_int: Option<Round>,
    mode: Round,
    fm: FloatMode,
    a: u64,
) -> u64 {
    let a = flush(a, from_wide, fm.ftz);
    if is_nan(a, from_wide) && !fm.sat && from_wide != to_wide {
        return nan_across(if fm.ftz && !from_wide { NAN32 } else { a }, to_wide);
    }
    let r = match round_int {
        Some(r) => from_f64(integral(value(a, from_wide), r), to_wide),
        None => round::convert(a, Format::of(from_wide), Format::of(to_wide), mode),
    };
    let r = tiny(r, to_wide, fm, || value(a, from_wide));
    finish(r, to_wide, fm, &[a])
}

/// A NaN `a` converted to the other width as an H200 converts it: its sign and the top of its
/// payload kept, made quiet (an f32 NaN under `.ftz` is the canonical one before it widens).
fn nan_across(a: u64, to_wide: bool) -> u64 {
    match to_wide {
        true => (a & 1 << 31) << 32 | QUIET64 | 0x7ff << 52 | (a & 0x7f_ffff) << 29,
        false => (a >> 32 & 1 << 31) | 0x7fc0_0000 | (a >> 29 & 0x3f_ffff),
    }
}

pub(crate) fn integral(x: f64, r: Round) -> f64 {
    match r {
        Round::Nearest => x.round_ties_even(),
        Round::Zero => x.trunc(),
        Round::Down => x.floor(),
        Round::Up => x.ceil(),
    }
}

/// An integer to a float, rounded in `mode`.
pub(crate) fn from_int(v: i128, to_wide: bool, mode: Round, fm: FloatMode) -> u64 {
    finish(round::from_int(v, Format::of(to_wide), mode), to_wide, fm, &[])
}

/// A float comparison (unordered when either is NaN).
pub(crate) fn ordered(cmp: Cmp, x: f64, y: f64) -> bool {
    let unordered = x.is_nan() || y.is_nan();
    match cmp {
        Cmp::Eq => x == y,
        Cmp::Ne => !unordered && x != y,
        Cmp::Lt => x < y,
        Cmp::Le => x <= y,
        Cmp::Gt => x > y,
        Cmp::Ge => x >= y,
        Cmp::Equ => unordered || x == y,
        Cmp::Neu => unordered || x != y,
        Cmp::Ltu => unordered || x < y,
        Cmp::Leu => unordered || x <= y,
        Cmp::Gtu => unordered || x > y,
        Cmp::Geu => unordered || x >= y,
        Cmp::Num => !unordered,
        Cmp::Nan => unordered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(round: Round, ftz: bool, sat: bool) -> FloatMode {
        FloatMode { round, ftz, sat }
    }

    #[test]
    fn saturation_flushing_and_nans() {
        let b = |f: f32| f.to_bits() as u64;
        assert_eq!(binary(BinOp::Add, false, fm(Round::Nearest, false, true), b(0.75), b(0.5)), b(1.0));
        assert_eq!(binary(BinOp::Sub, false, fm(Round::Nearest, false, true), b(0.25), b(0.5)), 0);
        assert_eq!(binary(BinOp::Div, false, fm(Round::Nearest, false, true), 0, 0), 0, "NaN saturates to 0");
        assert_eq!(binary(BinOp::Div, false, fm(Round::Zero, false, false), 0, 0), NAN32);
        let tiny = b(f32::MIN_POSITIVE / 4.0);
        assert_eq!(binary(BinOp::MulLo, false, fm(Round::Up, true, false), tiny, b(1.0)), 0);
        assert_eq!(binary(BinOp::MulLo, false, fm(Round::Up, false, false), tiny, b(1.0)), tiny);
        assert_eq!(binary(BinOp::Min, false, FloatMode::default(), b(-0.0), b(0.0)), b(-0.0));
        assert_eq!(binary(BinOp::Max, false, FloatMode::default(), NAN32, b(2.0)), b(2.0));
        assert_eq!(
            fma(true, fm(Round::Down, false, false), 1f64.to_bits(), 1f64.to_bits(), (-1f64).to_bits()),
            1 << 63
        );
        assert_eq!(unary(UnOp::Test(FloatClass::Subnormal), false, FloatMode::default(), tiny), 1);
        assert_eq!(unary(UnOp::Test(FloatClass::Normal), true, FloatMode::default(), 1f64.to_bits()), 1);
    }

    #[test]
    fn approximations_are_within_one_ulp() {
        let ulps = |got: u64, want: f64| ((got as u32 as i64) - ((want as f32).to_bits() as i64)).abs();
        for i in 1..2000 {
            let x = i as f32 * 0.0137 - 13.0;
            let a = x.to_bits() as u64;
            let m = FloatMode::default();
            assert!(ulps(unary(UnOp::Sin, false, m, a), (x as f64).sin()) <= 1);
            assert!(ulps(unary(UnOp::Ex2, false, m, a), (x as f64).exp2()) <= 1);
            let ax = x.abs().to_bits() as u64;
            assert!(ulps(unary(UnOp::Lg2, false, m, ax), (x.abs() as f64).log2()) <= 1);
            assert!(ulps(unary(UnOp::Rsqrt, false, m, ax), 1.0 / (x.abs() as f64).sqrt()) <= 1);
        }
    }
}
